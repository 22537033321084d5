#include "feedline/vision/transforms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/rng.h"

namespace feedline::vision {
namespace {

// torchvision.transforms.RandomResizedCrop.get_params, transcribed line by
// line from its Python source, with its random numbers taken from a list
// (the uniform(0, 1) values and integers an Rng would give).
struct RandomNumbers {
  Rng rng;
  double uniform(double lo, double hi) { return lo + (hi - lo) * rng.Uniform(); }
  int randint(int lo, int hi_exclusive) {
    return lo + static_cast<int>(rng.UniformInt(static_cast<uint64_t>(hi_exclusive - lo)));
  }
};

int PyRound(double x) {
  // Python 3 round(): ties to even.
  const double f = std::floor(x);
  const double diff = x - f;
  if (diff > 0.5) return static_cast<int>(f) + 1;
  if (diff < 0.5) return static_cast<int>(f);
  return static_cast<int>(f) % 2 == 0 ? static_cast<int>(f) : static_cast<int>(f) + 1;
}

CropBox TorchvisionGetParams(int height, int width, std::array<double, 2> scale,
                             std::array<double, 2> ratio, RandomNumbers& random) {
  const double area = height * width;
  const double log_ratio[2] = {std::log(ratio[0]), std::log(ratio[1])};
  for (int i = 0; i < 10; ++i) {
    const double target_area = area * random.uniform(scale[0], scale[1]);
    const double aspect_ratio = std::exp(random.uniform(log_ratio[0], log_ratio[1]));
    const int w = PyRound(std::sqrt(target_area * aspect_ratio));
    const int h = PyRound(std::sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = random.randint(0, height - h + 1);
      const int left = random.randint(0, width - w + 1);
      return CropBox{top, left, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int w, h;
  if (in_ratio < std::min(ratio[0], ratio[1])) {
    w = width;
    h = PyRound(w / std::min(ratio[0], ratio[1]));
  } else if (in_ratio > std::max(ratio[0], ratio[1])) {
    h = height;
    w = PyRound(h * std::max(ratio[0], ratio[1]));
  } else {
    w = width;
    h = height;
  }
  return CropBox{(height - h) / 2, (width - w) / 2, h, w};
}

TEST(RandomResizedCropBox, MatchesTorchvisionOnTheSameRandomNumbers) {
  const std::array<double, 2> kScale = {0.08, 1.0};
  const std::array<double, 2> kRatio = {3.0 / 4.0, 4.0 / 3.0};
  int distinct = 0;
  CropBox last;
  for (auto [h, w] : {std::pair{375, 500}, {500, 375}, {224, 224}, {7, 3000}, {1, 1}, {33, 65}}) {
    for (uint64_t index = 0; index < 300; ++index) {
      Rng rng(9, 1, index);
      RandomNumbers random{Rng(9, 1, index)};
      const CropBox ours = RandomResizedCropBox(h, w, kScale, kRatio, rng);
      const CropBox theirs = TorchvisionGetParams(h, w, kScale, kRatio, random);
      ASSERT_EQ(ours, theirs) << h << "x" << w << " index " << index;
      ASSERT_GE(ours.top, 0);
      ASSERT_GE(ours.left, 0);
      ASSERT_LE(ours.top + ours.height, h);
      ASSERT_LE(ours.left + ours.width, w);
      distinct += !(ours == last);
      last = ours;
    }
  }
  EXPECT_GT(distinct, 1000);  // the boxes really vary
}

TEST(RandomResizedCropBox, FallsBackToTheClampedCentralCrop) {
  // Areas larger than the image never fit: 10 failures, then the fallback.
  Rng rng(1, 0, 0);
  const CropBox wide = RandomResizedCropBox(100, 400, {2.0, 3.0}, {0.75, 4.0 / 3.0}, rng);
  EXPECT_EQ(wide, (CropBox{0, 133, 100, 133}));  // w = round(100 * 4/3)
  const CropBox tall = RandomResizedCropBox(400, 100, {2.0, 3.0}, {0.75, 4.0 / 3.0}, rng);
  EXPECT_EQ(tall, (CropBox{133, 0, 133, 100}));  // h = round(100 / 0.75)
  const CropBox square = RandomResizedCropBox(300, 320, {2.0, 3.0}, {0.75, 4.0 / 3.0}, rng);
  EXPECT_EQ(square, (CropBox{0, 0, 300, 320}));
}

TEST(RandomResizedCropBox, RoundsHalfToEvenLikePython) {
  EXPECT_EQ(PyRound(2.5), 2);
  EXPECT_EQ(PyRound(3.5), 4);
  // A 1 x 5 image with an area too large to fit: the fallback computes
  // w = round(1 * 2.5), which is 2 with ties to even (3 rounding half up).
  Rng rng(1, 0, 0);
  const CropBox box = RandomResizedCropBox(1, 5, {5.0, 5.0}, {2.5, 2.5}, rng);
  EXPECT_EQ(box.width, 2);
  EXPECT_EQ(box.left, 1);
}

TEST(ResizedSize, FollowsTorchvision) {
  const Transform r256 = Transform::Resize(256);
  EXPECT_EQ(ResizedSize(r256, 375, 500), (std::array<int, 2>{256, 341}));  // int(341.33)
  EXPECT_EQ(ResizedSize(r256, 500, 375), (std::array<int, 2>{341, 256}));
  EXPECT_EQ(ResizedSize(r256, 300, 300), (std::array<int, 2>{256, 256}));
  EXPECT_EQ(ResizedSize(r256, 100, 1000), (std::array<int, 2>{256, 2560}));
  const Transform capped = Transform::Resize(256, Interpolation::kBilinear, 300);
  EXPECT_EQ(ResizedSize(capped, 100, 1000), (std::array<int, 2>{30, 300}));  // int(300*256/2560)
  const Transform exact = Transform::Resize(100, 120);
  EXPECT_EQ(ResizedSize(exact, 375, 500), (std::array<int, 2>{100, 120}));
}

TEST(Transform, FactoriesRejectBadParameters) {
  EXPECT_THROW(Transform::Resize(0), Error);
  EXPECT_THROW(Transform::Resize(10, 0), Error);
  EXPECT_THROW(Transform::Resize(256, Interpolation::kBilinear, 200), Error);
  EXPECT_THROW(Transform::CenterCrop(-1), Error);
  EXPECT_THROW(Transform::RandomResizedCrop(224, {0.5, 0.1}), Error);
  EXPECT_THROW(Transform::RandomResizedCrop(224, {0.0, 1.0}), Error);
  EXPECT_THROW(Transform::RandomResizedCrop(224, {0.08, 1.0}, {2.0, 1.0}), Error);
  EXPECT_THROW(Transform::RandomHorizontalFlip(1.5), Error);
  EXPECT_THROW(Transform::Normalize({0, 0, 0}, {1, 0, 1}), Error);
  try {
    Transform::RandomHorizontalFlip(-0.25);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("random_horizontal_flip: p must be in [0, 1], got -0.25"),
              std::string::npos)
        << e.what();
  }
}

TEST(ParseTransforms, RoundTripsEveryTransform) {
  const std::vector<Transform> all = {
      Transform::Resize(256),
      Transform::Resize(256, Interpolation::kArea, 512),
      Transform::Resize(100, 200, Interpolation::kNearest),
      Transform::CenterCrop(224),
      Transform::CenterCrop(100, 120),
      Transform::RandomResizedCrop(224),
      Transform::RandomResizedCrop(160, 192, {0.25, 1.0}, {0.5, 2.0}, Interpolation::kArea),
      Transform::RandomHorizontalFlip(0.25),
      Transform::Normalize(),
      Transform::Normalize({0.5f, 0.5f, 0.5f}, {0.25f, 0.125f, 2.0f}),
      Transform::ToCHW(),
  };
  const std::string text = TransformsToString(all);
  EXPECT_EQ(ParseTransforms(text), all) << text;
  EXPECT_EQ(Transform::RandomResizedCrop(224).ToString(), "random_resized_crop(224)");
  EXPECT_EQ(Transform::Resize(100, 200).ToString(), "resize(100,200)");
}

TEST(ParseTransforms, RoundTripsTheDetectionSteps) {
  const std::vector<Transform> all = {
      Transform::RandomZoomOut(),
      Transform::RandomZoomOut({123, 117, 104}, {1.5, 3.0}, 0.25),
      Transform::RandomIoUCrop(),
      Transform::RandomIoUCrop({0.5, 0.9}, {0.75, 1.5}, {0.1, 0.5, 1.0}, 12),
      Transform::RandomPhotometricDistort(),
      Transform::RandomPhotometricDistort({0.6, 1.4}, {0.7, 1.3}, {-0.1, 0.1}, {0.9, 1.1}, 0.75),
      Transform::RandomShortestSize({480, 512, 800}, 1333),
      Transform::RandomShortestSize({64}, 100, Interpolation::kNearest),
      Transform::ScaleJitter(1024, 1024),
      Transform::ScaleJitter(512, 640, {0.5, 1.5}),
      Transform::FixedSizeCrop(1024, 1024),
      Transform::FixedSizeCrop(100, 120, {123, 117, 104}),
  };
  const std::string text = TransformsToString(all);
  EXPECT_EQ(ParseTransforms(text), all) << text;
  EXPECT_EQ(all[3].ToString(),
            "random_iou_crop(scale=0.5:0.9,ratio=0.75:1.5,options=0.1:0.5:1,trials=12)");
  EXPECT_EQ(ParseTransforms("RandomZoomOut(fill=1:2:3)")[0],
            Transform::RandomZoomOut({1, 2, 3}));
  EXPECT_THROW(ParseTransforms("random_zoom_out(side_range=0.5:2)"), Error);
  EXPECT_THROW(ParseTransforms("random_zoom_out(fill=300:0:0)"), Error);
  EXPECT_THROW(ParseTransforms("random_shortest_size(sizes=480:0,max_size=1333)"), Error);
  EXPECT_THROW(ParseTransforms("random_shortest_size(sizes=480.5,max_size=1333)"), Error);
  EXPECT_THROW(ParseTransforms("scale_jitter(1024,1024,scale=0:2)"), Error);
  EXPECT_EQ(ParseTransforms("ScaleJitter(1024, 1024)")[0], Transform::ScaleJitter(1024, 1024));
}

TEST(ParseTransforms, AcceptsTorchvisionNamesAndSpaces) {
  const std::vector<Transform> parsed = ParseTransforms(
      " RandomResizedCrop(224, scale=0.08:1) ; RandomHorizontalFlip ;Normalize; ToCHW ");
  const std::vector<Transform> expected = {Transform::RandomResizedCrop(224),
                                           Transform::RandomHorizontalFlip(0.5),
                                           Transform::Normalize(), Transform::ToCHW()};
  EXPECT_EQ(parsed, expected);
  EXPECT_TRUE(ParseTransforms("  ").empty());
}

TEST(ParseTransforms, NamesTheBadItem) {
  auto message = [](const std::string& spec) {
    try {
      ParseTransforms(spec);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("resize(256); blur(3)").find("transform 'blur(3)': unknown transform"),
            std::string::npos);
  EXPECT_NE(message("center_crop(abc)").find("'abc' is not an integer"), std::string::npos);
  EXPECT_NE(message("random_resized_crop(224,scale=1)").find("2 numbers"), std::string::npos);
  EXPECT_NE(message("resize(256,colour=red)").find("unknown argument 'colour'"), std::string::npos);
  EXPECT_NE(message("resize").find("needs a size"), std::string::npos);
  EXPECT_NE(message("to_chw(3)").find("too many arguments"), std::string::npos);
  EXPECT_NE(message("resize(256;").find("missing ')'"), std::string::npos);
  EXPECT_NE(message("random_horizontal_flip(2)").find("p must be in [0, 1]"), std::string::npos);
  EXPECT_NE(message("resize(256);;to_chw").find("empty item"), std::string::npos);
}

TEST(Transforms, ParseInterpolationAndPolicyAreTheInversesOfTheirNames) {
  for (Interpolation i :
       {Interpolation::kBilinear, Interpolation::kNearest, Interpolation::kArea}) {
    EXPECT_EQ(ParseInterpolation(InterpolationName(i)), i);
  }
  for (AutoAugmentPolicy p :
       {AutoAugmentPolicy::kImageNet, AutoAugmentPolicy::kCifar10, AutoAugmentPolicy::kSvhn}) {
    EXPECT_EQ(ParseAutoAugmentPolicy(AutoAugmentPolicyName(p)), p);
  }
  EXPECT_THROW(ParseInterpolation("bicubic"), Error);
  EXPECT_THROW(ParseAutoAugmentPolicy("mnist"), Error);
  // Inside a transform list, the message names the item too.
  try {
    ParseTransforms("resize(32, interpolation=bicubic)");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("interpolation must be 'bilinear', 'nearest' or 'area'"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("transform 'resize"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace feedline::vision
