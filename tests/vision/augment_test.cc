// The augmentation transforms in C++: their spelling, validation, place in
// the pipeline (the same pixels as applying the drawn op to the pipeline's
// plain output, with the same Rng), and their parameter distributions
// against torchvision's, with statistical bounds a wrong implementation
// fails. Pixel agreement with torchvision itself is checked from Python
// (python/tests/vision/test_augment.py), where torchvision is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/rng.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/auto_augment.h"
#include "feedline/vision/color_jitter.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/random_erasing.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {
namespace {

std::vector<uint8_t> RunBytes(const Pipeline& pipeline, const std::vector<uint8_t>& data,
                              uint64_t seed, int64_t index) {
  Sample sample;
  SampleContext ctx(seed, 0, index);
  pipeline.Run(data, "test.png", sample, "image", ctx);
  const Tensor& image = sample["image"];
  const uint8_t* p = static_cast<const uint8_t*>(image.raw());
  return std::vector<uint8_t>(p, p + image.bytes());
}

std::vector<uint8_t> Photo(int width, int height, uint64_t seed) {
  return EncodePng(SynthesizeImage(width, height, seed), width, height, {});
}

// The chi-square quantile at 1 - 1e-6 (Wilson-Hilferty): a correct
// sampler exceeds it once in a million runs.
double ChiSquareBound(int dof) {
  const double z = 4.753;  // the standard normal quantile at 1 - 1e-6
  const double k = dof;
  return k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
}

double ChiSquare(const std::vector<int>& counts, double expected) {
  double sum = 0;
  for (int c : counts) sum += (c - expected) * (c - expected) / expected;
  return sum;
}

// Two-sample Kolmogorov-Smirnov statistic and its bound at alpha = 1e-6.
double KsStatistic(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  double worst = 0;
  for (double x : a) {
    const double fa = double(std::upper_bound(a.begin(), a.end(), x) - a.begin()) / a.size();
    const double fb = double(std::upper_bound(b.begin(), b.end(), x) - b.begin()) / b.size();
    worst = std::max(worst, std::abs(fa - fb));
  }
  for (double x : b) {
    const double fa = double(std::upper_bound(a.begin(), a.end(), x) - a.begin()) / a.size();
    const double fb = double(std::upper_bound(b.begin(), b.end(), x) - b.begin()) / b.size();
    worst = std::max(worst, std::abs(fa - fb));
  }
  return worst;
}

double KsBound(size_t n, size_t m) {
  return std::sqrt(-std::log(1e-6 / 2) / 2) * std::sqrt(double(n + m) / (double(n) * m));
}

TEST(AugmentTransformTest, SpellingRoundTrips) {
  const std::vector<Transform> steps = {
      Transform::ColorJitter({0.6, 1.4}, {1, 1}, {0.5, 1.5}, {-0.1, 0.1}),
      Transform::TrivialAugmentWide(),
      Transform::TrivialAugmentWide(11, Interpolation::kBilinear, {1, 2, 3}),
      Transform::RandAugment(3, 5, 21),
      Transform::AutoAugment(AutoAugmentPolicy::kSvhn),
      Transform::RandomErasing(0.25, {0.1, 0.2}, {0.5, 2}, {0.5, 0, -1}),
      Transform::RandomErasing(1, {0.02, 0.33}, {0.3, 3.3}, {0, 0, 0}, true),
  };
  const std::string text = TransformsToString(steps);
  EXPECT_EQ(ParseTransforms(text), steps) << text;
  EXPECT_EQ(ParseTransforms("TrivialAugmentWide; RandomErasing(p=0.5, value=random)"),
            (std::vector<Transform>{Transform::TrivialAugmentWide(),
                                    Transform::RandomErasing(0.5, {0.02, 0.33}, {0.3, 3.3},
                                                             {0, 0, 0}, true)}));
}

TEST(AugmentTransformTest, InvalidParametersNameTheArgument) {
  auto message = [](auto make) {
    try {
      make();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { Transform::ColorJitter({-0.1, 1}); }).find("brightness"),
            std::string::npos);
  EXPECT_NE(message([] { Transform::ColorJitter({1, 1}, {1, 1}, {1, 1}, {-0.6, 0}); }).find("hue"),
            std::string::npos);
  EXPECT_NE(message([] { Transform::RandAugment(2, 31, 31); }).find("magnitude"),
            std::string::npos);
  EXPECT_NE(message([] { Transform::TrivialAugmentWide(1); }).find("num_magnitude_bins"),
            std::string::npos);
  EXPECT_NE(message([] { Transform::TrivialAugmentWide(31, Interpolation::kArea); })
                .find("interpolation"),
            std::string::npos);
  EXPECT_NE(message([] { Transform::RandomErasing(0.5, {0.5, 1.5}); }).find("scale"),
            std::string::npos);
  EXPECT_NE(message([] { Transform::RandomErasing(0.5, {0.1, 0.2}, {0, 1}); }).find("ratio"),
            std::string::npos);
  EXPECT_NE(message([] { ParseTransforms("rand_augment(num_ops=-1)"); }).find("num_ops"),
            std::string::npos);
  EXPECT_NE(message([] { ParseTransforms("auto_augment(policy=mnist)"); }).find("policy"),
            std::string::npos);
}

TEST(AugmentPipelineTest, RefusesStepsOutOfOrder) {
  PipelineOptions f32;
  PipelineOptions u8;
  u8.dtype = DType::kU8;
  EXPECT_THROW(Pipeline({Transform::TrivialAugmentWide(), Transform::CenterCrop(8)}, u8), Error);
  EXPECT_THROW(Pipeline({Transform::CenterCrop(8), Transform::Normalize(),
                         Transform::ColorJitter({0.5, 1.5})},
                        f32),
               Error);
  EXPECT_THROW(Pipeline({Transform::CenterCrop(8), Transform::RandomErasing(),
                         Transform::AutoAugment()},
                        f32),
               Error);
  EXPECT_THROW(Pipeline({Transform::CenterCrop(8), Transform::RandomErasing()}, u8), Error);
  EXPECT_NO_THROW(Pipeline({Transform::CenterCrop(8), Transform::ToCHW(),
                            Transform::TrivialAugmentWide()},
                           u8));
}

// The pipeline with augmentations gives exactly the plain pipeline's
// pixels with the drawn ops applied, the draws continuing the sample's Rng
// after the crop and flip: the same bytes in any worker.
TEST(AugmentPipelineTest, AugmentsThePlainOutputWithTheSampleRng) {
  const std::vector<uint8_t> png = Photo(180, 140, 3);
  PipelineOptions u8;
  u8.dtype = DType::kU8;
  const std::vector<Transform> geometric = {Transform::RandomResizedCrop(64),
                                            Transform::RandomHorizontalFlip()};
  const Pipeline plain(geometric, u8);
  std::vector<Transform> steps = geometric;
  steps.push_back(Transform::ColorJitter({0.6, 1.4}, {0.6, 1.4}, {0.6, 1.4}, {-0.1, 0.1}));
  steps.push_back(Transform::TrivialAugmentWide());
  steps.push_back(Transform::RandAugment());
  steps.push_back(Transform::AutoAugment());
  const Pipeline augmented(steps, u8);
  int changed = 0;
  for (int index = 0; index < 12; ++index) {
    std::vector<uint8_t> expected = RunBytes(plain, png, 7, index);
    Rng rng(7, 0, index);
    plain.Plan(140, 180, rng);  // the crop and flip draws
    RgbImageView view{expected.data(), 64, 64};
    std::vector<uint8_t> scratch;
    ApplyColorJitter(view, DrawColorJitter(steps[2], rng));
    for (const auto& draws : {DrawTrivialAugmentWide(31, rng), DrawRandAugment(2, 9, 31, 64, 64, rng),
                              DrawAutoAugment(AutoAugmentPolicy::kImageNet, 64, 64, rng)}) {
      for (const AugmentChoice& c : draws) {
        ApplyAugmentOp(view, c.op, c.magnitude, Interpolation::kNearest, {0, 0, 0}, scratch);
      }
    }
    const std::vector<uint8_t> got = RunBytes(augmented, png, 7, index);
    ASSERT_EQ(got, expected) << "index " << index;
    changed += got != RunBytes(plain, png, 7, index);
  }
  EXPECT_GE(changed, 10);
}

TEST(AugmentPipelineTest, RandomErasingErasesTheDrawnBox) {
  const std::vector<uint8_t> png = Photo(120, 100, 4);
  const std::vector<Transform> base = {Transform::CenterCrop(48), Transform::ToCHW(),
                                       Transform::Normalize()};
  std::vector<Transform> steps = base;
  steps.push_back(Transform::RandomErasing(1.0, {0.02, 0.33}, {0.3, 3.3}, {0, 0, 0}));
  const Pipeline plain(base), erasing(steps);
  for (int index = 0; index < 8; ++index) {
    std::vector<uint8_t> bytes = RunBytes(plain, png, 2, index);
    std::vector<float> expected(bytes.size() / 4);
    std::memcpy(expected.data(), bytes.data(), bytes.size());
    Rng rng(2, 0, index);
    std::vector<float> noise;
    const ErasingBox box = DrawRandomErasing(steps.back(), 48, 48, 3, rng, &noise);
    ASSERT_TRUE(box.erase);
    EraseTensor(Tensor(DType::kF32, Shape{3, 48, 48}, expected.data()), true, box, steps.back(),
                noise, {});
    bytes = RunBytes(erasing, png, 2, index);
    std::vector<float> got(bytes.size() / 4);
    std::memcpy(got.data(), bytes.data(), bytes.size());
    ASSERT_EQ(got, expected);
    EXPECT_EQ(std::count(got.begin(), got.end(), 0.0f), 3 * box.height * box.width);
  }
}

// ColorJitter.get_params: torch.randperm(4) gives each of the 24 orders
// equally often; the factors are uniform on their ranges.
TEST(AugmentDistributionTest, ColorJitterOrderAndFactors) {
  const Transform jitter = Transform::ColorJitter({0.6, 1.4}, {1, 1}, {0.5, 1.5}, {-0.1, 0.1});
  const int n = 24000;
  std::map<std::array<int, 4>, int> orders;
  std::vector<double> brightness, uniform;
  std::mt19937_64 reference(5);
  for (int i = 0; i < n; ++i) {
    Rng rng(1, 0, i);
    const ColorJitterParams p = DrawColorJitter(jitter, rng);
    ++orders[p.order];
    ASSERT_TRUE(p.brightness && p.saturation && p.hue);
    ASSERT_FALSE(p.contrast);  // [1, 1] is torchvision's None
    brightness.push_back(*p.brightness);
    uniform.push_back(std::uniform_real_distribution<double>(0.6, 1.4)(reference));
  }
  ASSERT_EQ(orders.size(), 24u);
  std::vector<int> counts;
  for (const auto& [order, count] : orders) counts.push_back(count);
  EXPECT_LT(ChiSquare(counts, n / 24.0), ChiSquareBound(23));
  EXPECT_LT(KsStatistic(brightness, uniform), KsBound(n, n));
  // The bound sees a range off by 0.05.
  std::vector<double> shifted = uniform;
  for (double& v : shifted) v += 0.05;
  EXPECT_GT(KsStatistic(brightness, shifted), KsBound(n, n));
}

// TrivialAugmentWide: each of the 14 ops and each of the 31 bins equally
// likely, signed ops negative half the time.
TEST(AugmentDistributionTest, TrivialAugmentWideOpsAndBins) {
  const int n = 28000;
  std::vector<int> ops(14), bins(31);
  int negative = 0, signed_draws = 0;
  const std::vector<AugmentSpaceEntry> space = TrivialAugmentWideSpace(31);
  for (int i = 0; i < n; ++i) {
    Rng rng(3, 0, i);
    const AugmentChoice c = DrawTrivialAugmentWide(31, rng)[0];
    ++ops[static_cast<int>(c.op)];
    if (c.op == AugmentOp::kRotate) {
      // Rotate's bins are 0, 4.5, ..., 135 degrees.
      ++bins[static_cast<int>(std::lround(std::abs(c.magnitude) / 4.5))];
      ++signed_draws;
      negative += c.magnitude < 0;
    }
  }
  EXPECT_LT(ChiSquare(ops, n / 14.0), ChiSquareBound(13));
  EXPECT_LT(ChiSquare(bins, signed_draws / 31.0), ChiSquareBound(30));
  // Negative half the time (bin 0 is -0.0, counted as not negative).
  EXPECT_NEAR(double(negative) / signed_draws, 0.5 * 30 / 31, 5 * 0.5 / std::sqrt(signed_draws));
  // torchvision's magnitude tables.
  EXPECT_EQ(space[5].op, AugmentOp::kRotate);
  EXPECT_DOUBLE_EQ(space[5].magnitudes[30], 135.0);
  EXPECT_EQ(space[10].op, AugmentOp::kPosterize);
  EXPECT_EQ(space[10].magnitudes[0], 8);
  EXPECT_EQ(space[10].magnitudes[30], 2);
  EXPECT_DOUBLE_EQ(space[3].magnitudes[15], 16.0);
}

// RandomErasing.get_params transcribed from torchvision with its own
// generator: the erased area fractions have the same distribution.
TEST(AugmentDistributionTest, RandomErasingAreaMatchesTorchvisionGetParams) {
  const Transform erasing = Transform::RandomErasing(1.0);
  const int n = 6000, height = 56, width = 72;
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto torchvision_fraction = [&](std::array<double, 2> scale) {
    const double area = double(height) * width;
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double erase_area = area * (scale[0] + (scale[1] - scale[0]) * unit(gen));
      const double log_lo = std::log(0.3), log_hi = std::log(3.3);
      const double aspect = std::exp(log_lo + (log_hi - log_lo) * unit(gen));
      const int h = static_cast<int>(std::nearbyint(std::sqrt(erase_area * aspect)));
      const int w = static_cast<int>(std::nearbyint(std::sqrt(erase_area / aspect)));
      if (h < height && w < width) return h * w / area;
    }
    return 0.0;
  };
  std::vector<double> ours, theirs, wrong;
  for (int i = 0; i < n; ++i) {
    Rng rng(9, 0, i);
    const ErasingBox box = DrawRandomErasing(erasing, height, width, 3, rng, nullptr);
    ours.push_back(box.erase ? double(box.height) * box.width / (height * width) : 0.0);
    ASSERT_TRUE(!box.erase || (box.top + box.height <= height && box.left + box.width <= width));
    theirs.push_back(torchvision_fraction({0.02, 0.33}));
    wrong.push_back(torchvision_fraction({0.02, 0.30}));
  }
  EXPECT_LT(KsStatistic(ours, theirs), KsBound(n, n));
  EXPECT_GT(KsStatistic(ours, wrong), KsBound(n, n));
}

}  // namespace
}  // namespace feedline::vision
