#include "feedline/vision/pipeline.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/image_ops.h"
#include "src/core/sample_binder.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

PipelineOptions Options(DType dtype, bool fused = true) {
  PipelineOptions options;
  options.dtype = dtype;
  options.fused = fused;
  return options;
}

// Runs `pipeline` on `data` as sample (seed, epoch, index) and returns the
// bytes of its "image" field.
std::vector<uint8_t> RunBytes(const Pipeline& pipeline, const std::vector<uint8_t>& data,
                              uint64_t seed, int64_t epoch, int64_t index, Shape* shape = nullptr) {
  Sample sample;
  SampleContext ctx(seed, epoch, index);
  pipeline.Run(data, "test.jpg", sample, "image", ctx);
  const Tensor& image = sample["image"];
  if (shape != nullptr) *shape = image.shape();
  const uint8_t* p = static_cast<const uint8_t*>(image.raw());
  return std::vector<uint8_t>(p, p + image.bytes());
}

struct AccuracyCase {
  const char* name;
  int width, height, size;
  ChromaSubsampling subsampling;
  bool progressive, grayscale;
};

// The fused path (region decode + DCT scaling) against the reference (full
// decode, then the same box and filter): at most 2 levels of 255 on average.
TEST(Pipeline, FusedDecodeMatchesTheFullDecodeReference) {
  const AccuracyCase cases[] = {
      {"full_scale_420", 500, 375, 224, ChromaSubsampling::k420, false, false},
      {"scaled_420", 1024, 768, 112, ChromaSubsampling::k420, false, false},
      {"scaled_444", 1024, 768, 112, ChromaSubsampling::k444, false, false},
      {"scaled_422", 1024, 768, 112, ChromaSubsampling::k422, false, false},
      {"scaled_progressive", 1024, 768, 112, ChromaSubsampling::k420, true, false},
      {"scaled_gray", 1024, 768, 112, ChromaSubsampling::k420, false, true},
      {"eighth_scale", 1280, 960, 48, ChromaSubsampling::k420, false, false},
  };
  for (const AccuracyCase& c : cases) {
    JpegEncodeOptions encode;
    encode.subsampling = c.subsampling;
    encode.progressive = c.progressive;
    encode.grayscale = c.grayscale;
    const std::vector<uint8_t> jpeg = SynthesizeJpeg(c.width, c.height, 51, encode);
    const std::vector<Transform> steps = {Transform::RandomResizedCrop(c.size)};
    const Pipeline fused(steps, Options(DType::kU8));
    const Pipeline reference(steps, Options(DType::kU8, /*fused=*/false));
    int scales[9] = {};
    double total = 0;
    const int kSamples = 16;
    for (int i = 0; i < kSamples; ++i) {
      Rng rng(3, 0, i);
      const PipelinePlan plan = fused.Plan(c.height, c.width, rng);
      ++scales[plan.max_scale];
      const std::vector<uint8_t> a = RunBytes(fused, jpeg, 3, 0, i);
      const std::vector<uint8_t> b = RunBytes(reference, jpeg, 3, 0, i);
      const double diff = testing::MeanAbsDiff(a, b);
      if (plan.max_scale == 1) {
        // Region decode alone is exact: same pixels, same box, same filter.
        EXPECT_EQ(diff, 0.0) << c.name << " sample " << i;
      }
      // Single samples may go a little past the 2-level bound on the mean.
      EXPECT_LE(diff, 3.0) << c.name << " sample " << i << " scale " << plan.max_scale;
      total += diff;
    }
    EXPECT_LE(total / kSamples, 2.0) << c.name;
    if (std::string(c.name) != "full_scale_420") {
      EXPECT_GT(scales[2] + scales[4] + scales[8], kSamples / 2) << c.name << ": DCT unused";
    }
    if (std::string(c.name) == "eighth_scale") {
      EXPECT_GT(scales[8], 0);
    }
  }
}

TEST(Pipeline, ValRecipeFusedMatchesReference) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(900, 700, 52);
  const std::vector<Transform> steps = {Transform::Resize(128), Transform::CenterCrop(112)};
  const std::vector<uint8_t> a = RunBytes(Pipeline(steps, Options(DType::kU8)), jpeg, 0, 0, 0);
  const std::vector<uint8_t> b =
      RunBytes(Pipeline(steps, Options(DType::kU8, false)), jpeg, 0, 0, 0);
  EXPECT_LE(testing::MeanAbsDiff(a, b), 2.0);
}

TEST(Pipeline, PlanUsesTorchvisionCropParameters) {
  const Pipeline pipeline({Transform::RandomResizedCrop(224)});
  for (int i = 0; i < 50; ++i) {
    Rng a(7, 2, i), b(7, 2, i);
    const PipelinePlan plan = pipeline.Plan(375, 500, a);
    const CropBox box = RandomResizedCropBox(375, 500, {0.08, 1.0}, {0.75, 4.0 / 3.0}, b);
    EXPECT_EQ(plan.x, box.left);
    EXPECT_EQ(plan.y, box.top);
    EXPECT_EQ(plan.width, box.width);
    EXPECT_EQ(plan.height, box.height);
    EXPECT_EQ(plan.out_width, 224);
    EXPECT_EQ(plan.out_height, 224);
    EXPECT_FALSE(plan.flip);
  }
}

TEST(Pipeline, PlanOfResizeThenCenterCrop) {
  // torchvision: Resize(256) makes 375x500 into 256x341; CenterCrop(224)
  // then keeps rows from round(16.0) = 16 and columns from round(58.5) = 58
  // (ties to even). In the original image that box is scaled by 500/341 and
  // 375/256, then snapped to whole pixels.
  const Pipeline pipeline({Transform::Resize(256), Transform::CenterCrop(224)});
  Rng rng(0, 0, 0);
  const PipelinePlan plan = pipeline.Plan(375, 500, rng);
  const double sx = 500.0 / 341, sy = 375.0 / 256;
  EXPECT_EQ(plan.max_scale, 1);
  EXPECT_EQ(plan.x, std::nearbyint(58 * sx));                        // 85
  EXPECT_EQ(plan.y, std::nearbyint(16 * sy));                        // 23
  EXPECT_EQ(plan.x + plan.width, std::nearbyint((58 + 224) * sx));   // 413
  EXPECT_EQ(plan.y + plan.height, std::nearbyint((16 + 224) * sy));  // 352
  EXPECT_EQ(plan.out_width, 224);
  EXPECT_EQ(plan.out_height, 224);
}

TEST(Pipeline, PlanSnapsTheBoxToTheDctScaleGrid) {
  const Pipeline pipeline({Transform::RandomResizedCrop(100)});
  for (int i = 0; i < 200; ++i) {
    Rng a(4, 0, i), b(4, 0, i);
    const PipelinePlan plan = pipeline.Plan(1001, 1333, a);
    const CropBox box = RandomResizedCropBox(1001, 1333, {0.08, 1.0}, {0.75, 4.0 / 3.0}, b);
    const int s = plan.max_scale;
    EXPECT_EQ(s, box.width >= 800 && box.height >= 800   ? 8
                 : box.width >= 400 && box.height >= 400 ? 4
                 : box.width >= 200 && box.height >= 200 ? 2
                                                         : 1);
    EXPECT_LE(std::abs(plan.x - box.left), s / 2.0);
    EXPECT_LE(std::abs(plan.y - box.top), s / 2.0);
    EXPECT_LE(std::abs(plan.x + plan.width - box.left - box.width), s / 2.0);
    EXPECT_LE(std::abs(plan.y + plan.height - box.top - box.height), s / 2.0);
    // On the grid, or on the image's edge.
    EXPECT_TRUE(std::fmod(plan.x, s) == 0) << plan.x << " scale " << s;
    const double right = plan.x + plan.width, bottom = plan.y + plan.height;
    EXPECT_TRUE(std::fmod(right, s) == 0 || right == 1333) << right;
    EXPECT_TRUE(std::fmod(bottom, s) == 0 || bottom == 1001) << bottom;
    EXPECT_LE(right, 1333);
    EXPECT_LE(bottom, 1001);
  }
}

TEST(Pipeline, PlanChoosesTheLargestCoveringDctScale) {
  const Pipeline pipeline({Transform::CenterCrop(800), Transform::Resize(100, 100)});
  Rng rng(0, 0, 0);
  EXPECT_EQ(pipeline.Plan(800, 800, rng).max_scale, 8);  // 800 / 8 = 100 covers 100
  EXPECT_EQ(Pipeline({Transform::CenterCrop(799), Transform::Resize(100, 100)})
                .Plan(800, 800, rng)
                .max_scale,
            4);
  EXPECT_EQ(Pipeline({Transform::CenterCrop(300, 800), Transform::Resize(100, 100)})
                .Plan(800, 800, rng)
                .max_scale,
            2);  // the short side decides
  EXPECT_EQ(
      Pipeline({Transform::CenterCrop(800), Transform::Resize(100, 100, Interpolation::kNearest)})
          .Plan(800, 800, rng)
          .max_scale,
      1);  // nearest must see real pixels
}

TEST(Pipeline, FlipBeforeACropMirrorsTheBox) {
  // Width 200, crop 45: torchvision keeps columns from round(77.5) = 78; on
  // the mirrored image that window is columns 77..121 of the original.
  Rng rng(0, 0, 0);
  const Pipeline no_flip({Transform::RandomHorizontalFlip(0.0), Transform::CenterCrop(50, 45)});
  EXPECT_EQ(no_flip.Plan(100, 200, rng).x, 78);
  const Pipeline flip_first({Transform::RandomHorizontalFlip(1.0), Transform::CenterCrop(50, 45)});
  const PipelinePlan plan = flip_first.Plan(100, 200, rng);
  EXPECT_TRUE(plan.flip);
  EXPECT_EQ(plan.x, 77);
  const Pipeline flip_last({Transform::CenterCrop(50, 45), Transform::RandomHorizontalFlip(1.0)});
  EXPECT_EQ(flip_last.Plan(100, 200, rng).x, 78);
  const Pipeline twice(
      {Transform::RandomHorizontalFlip(1.0), Transform::RandomHorizontalFlip(1.0)});
  EXPECT_FALSE(twice.Plan(100, 200, rng).flip);
}

// The scalar reference of ToTensor + Normalize + ToCHW (+ flip), with
// Normalize as documented: fmaf(x, 1 / (255 std), -mean / std).
std::vector<float> ScalarReference(const std::vector<uint8_t>& hwc, int h, int w, bool flip,
                                   const std::array<float, 3>& mean,
                                   const std::array<float, 3>& std) {
  std::vector<float> out(static_cast<size_t>(3) * h * w);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const int sx = flip ? w - 1 - x : x;
        const float v = static_cast<float>(hwc[(static_cast<size_t>(y) * w + sx) * 3 + c]);
        const float scale = static_cast<float>(1.0 / (255.0 * std[c]));
        const float bias = static_cast<float>(-mean[c] / static_cast<double>(std[c]));
        out[(static_cast<size_t>(c) * h + y) * w + x] = std::fmaf(v, scale, bias);
      }
    }
  }
  return out;
}

TEST(Pipeline, NormalizeIsWithinTwoUlpsOfTorchvision) {
  std::vector<uint8_t> gray(16 * 16 * 3);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<uint8_t>(i);  // all 256 values
  const std::vector<uint8_t> out =
      RunBytes(Pipeline({Transform::Normalize()}), EncodePng(gray, 16, 16), 0, 0, 0);
  for (size_t i = 0; i < gray.size(); ++i) {
    float got;
    std::memcpy(&got, out.data() + 4 * i, 4);
    const int c = static_cast<int>(i % 3);
    const float expected =
        (static_cast<float>(gray[i]) / 255.0f - kImageNetMean[c]) / kImageNetStd[c];
    EXPECT_NEAR(got, expected, 5e-7f * std::max(1.0f, std::abs(expected))) << i;
  }
}

TEST(Pipeline, NormalizeAndToChwAreExact) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(300, 200, 53);
  const std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  const std::array<float, 3> std = {0.229f, 0.224f, 0.225f};
  for (bool flip : {false, true}) {
    const double p = flip ? 1.0 : 0.0;
    const Pipeline u8({Transform::RandomResizedCrop(64), Transform::RandomHorizontalFlip(p)},
                      Options(DType::kU8));
    const Pipeline f32({Transform::RandomResizedCrop(64), Transform::RandomHorizontalFlip(p),
                        Transform::Normalize(mean, std), Transform::ToCHW()},
                       Options(DType::kF32));
    const Pipeline f16({Transform::RandomResizedCrop(64), Transform::RandomHorizontalFlip(p),
                        Transform::Normalize(mean, std), Transform::ToCHW()},
                       Options(DType::kF16));
    for (int i = 0; i < 4; ++i) {
      // The u8 output is already flipped; undo it for the reference input.
      std::vector<uint8_t> hwc = RunBytes(u8, jpeg, 1, 0, i);
      if (flip) {
        for (int y = 0; y < 64; ++y) {
          for (int x = 0; x < 32; ++x) {
            for (int c = 0; c < 3; ++c) {
              std::swap(hwc[(y * 64 + x) * 3 + c], hwc[(y * 64 + 63 - x) * 3 + c]);
            }
          }
        }
      }
      const std::vector<float> expected = ScalarReference(hwc, 64, 64, flip, mean, std);
      Shape shape;
      const std::vector<uint8_t> got = RunBytes(f32, jpeg, 1, 0, i, &shape);
      EXPECT_EQ(shape, (Shape{3, 64, 64}));
      ASSERT_EQ(got.size(), expected.size() * sizeof(float));
      EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0) << "flip " << flip;
      const std::vector<uint8_t> half = RunBytes(f16, jpeg, 1, 0, i);
      ASSERT_EQ(half.size(), expected.size() * 2);
      for (size_t k = 0; k < expected.size(); ++k) {
        uint16_t bits;
        std::memcpy(&bits, half.data() + 2 * k, 2);
        ASSERT_EQ(bits, FloatToHalf(expected[k])) << k;
      }
    }
  }
}

TEST(Pipeline, FloatWithoutNormalizeIsToTensorAndHwcStaysHwc) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(120, 90, 54);
  const Pipeline u8({Transform::CenterCrop(32)}, Options(DType::kU8));
  const Pipeline f32({Transform::CenterCrop(32)}, Options(DType::kF32));
  const std::vector<uint8_t> pixels = RunBytes(u8, jpeg, 0, 0, 0);
  Shape shape;
  const std::vector<uint8_t> floats = RunBytes(f32, jpeg, 0, 0, 0, &shape);
  EXPECT_EQ(shape, (Shape{32, 32, 3}));
  for (size_t k = 0; k < pixels.size(); ++k) {
    float v;
    std::memcpy(&v, floats.data() + 4 * k, 4);
    ASSERT_EQ(v, static_cast<float>(pixels[k]) / 255.0f);
  }
}

TEST(Pipeline, U8ChwIsATransposition) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(120, 90, 55);
  const std::vector<uint8_t> hwc =
      RunBytes(Pipeline({Transform::CenterCrop(20, 30)}, Options(DType::kU8)), jpeg, 0, 0, 0);
  Shape shape;
  const std::vector<uint8_t> chw =
      RunBytes(Pipeline({Transform::CenterCrop(20, 30), Transform::ToCHW()}, Options(DType::kU8)),
               jpeg, 0, 0, 0, &shape);
  EXPECT_EQ(shape, (Shape{3, 20, 30}));
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 600; ++i) ASSERT_EQ(chw[c * 600 + i], hwc[i * 3 + c]);
  }
}

TEST(Pipeline, CenterCropLargerThanTheImagePadsWithZeros) {
  const int w = 40, h = 30;
  const std::vector<uint8_t> rgb = SynthesizeImage(w, h, 56);
  const std::vector<uint8_t> png = EncodePng(rgb, w, h);
  const std::vector<uint8_t> out =
      RunBytes(Pipeline({Transform::CenterCrop(50, 60)}, Options(DType::kU8)), png, 0, 0, 0);
  // torchvision pads (60 - 40) / 2 = 10 columns left, (50 - 30) / 2 = 10 rows top.
  for (int y = 0; y < 50; ++y) {
    for (int x = 0; x < 60; ++x) {
      const bool inside = y >= 10 && y < 40 && x >= 10 && x < 50;
      for (int c = 0; c < 3; ++c) {
        const uint8_t v = out[(y * 60 + x) * 3 + c];
        ASSERT_EQ(v, inside ? rgb[((y - 10) * w + x - 10) * 3 + c] : 0) << x << "," << y;
      }
    }
  }
}

TEST(Pipeline, SameSampleGivesTheSameBytes) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(400, 350, 57);
  const Pipeline train = TrainPipeline(96);
  const std::vector<uint8_t> a = RunBytes(train, jpeg, 5, 3, 17);
  const std::vector<uint8_t> b = RunBytes(train, jpeg, 5, 3, 17);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, RunBytes(train, jpeg, 5, 3, 18));  // another index
  EXPECT_NE(a, RunBytes(train, jpeg, 5, 4, 17));  // another epoch
  EXPECT_NE(a, RunBytes(train, jpeg, 6, 3, 17));  // another seed
}

TEST(Pipeline, FlipProbabilityIsHonoured) {
  const Pipeline pipeline({Transform::RandomHorizontalFlip(0.3)});
  int flips = 0;
  for (int i = 0; i < 2000; ++i) {
    Rng rng(1, 0, i);
    flips += pipeline.Plan(10, 10, rng).flip;
  }
  EXPECT_NEAR(flips, 600, 90);  // 4.5 standard deviations
}

TEST(Pipeline, WritesStraightIntoABoundField) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(200, 150, 58);
  const Pipeline train = TrainPipeline(64);
  ASSERT_TRUE(train.FixedShape().has_value());
  std::vector<float> row(3 * 64 * 64, -1000.0f);
  Sample sample;
  feedline::internal::SampleBinder::Bind(sample, "image", DType::kF32, *train.FixedShape(),
                                         reinterpret_cast<std::byte*>(row.data()));
  SampleContext ctx(1, 0, 0);
  train.Run(jpeg, "x.jpg", sample, "image", ctx);
  EXPECT_EQ(sample["image"].raw(), row.data());
  EXPECT_TRUE(feedline::internal::SampleBinder::IsBound(sample, 0));
  for (float v : row) ASSERT_GT(v, -10.0f);  // every element written
  EXPECT_EQ(RunBytes(train, jpeg, 1, 0, 0),
            std::vector<uint8_t>(reinterpret_cast<uint8_t*>(row.data()),
                                 reinterpret_cast<uint8_t*>(row.data() + row.size())));
}

TEST(Pipeline, ReportsDecodeAndTransformTime) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(200, 150, 59);
  Sample sample;
  SampleContext ctx(1, 0, 0);
  TrainPipeline(64).Run(jpeg, "x.jpg", sample, "image", ctx);
  EXPECT_GT(ctx.stage_ns(Stage::kDecode), 0);
  EXPECT_GT(ctx.stage_ns(Stage::kTransform), 0);
  EXPECT_EQ(ctx.stage_ns(Stage::kRead), 0);
}

TEST(Pipeline, DecodeErrorsNameTheSource) {
  Sample sample;
  SampleContext ctx(1, 0, 0);
  const std::vector<uint8_t> junk = {1, 2, 3};
  testing::ExpectSampleError(
      [&] { TrainPipeline().Run(junk, "dir/bad.jpg", sample, "image", ctx); }, "format",
      "dir/bad.jpg");
}

TEST(Pipeline, ShapesAndRecipes) {
  EXPECT_EQ(*TrainPipeline(224).FixedShape(), (Shape{3, 224, 224}));
  EXPECT_EQ(*TrainPipeline(160, DType::kU8).FixedShape(), (Shape{160, 160, 3}));
  EXPECT_EQ(TrainPipeline(224).dtype(), DType::kF32);
  EXPECT_EQ(*ValPipeline(256, 224).FixedShape(), (Shape{3, 224, 224}));
  EXPECT_EQ(TrainPipeline(224).ToString(),
            "random_resized_crop(224); random_horizontal_flip(0.5); normalize; to_chw -> f32");
  const Pipeline resize_only({Transform::Resize(100)}, Options(DType::kU8));
  EXPECT_FALSE(resize_only.FixedShape().has_value());
  EXPECT_EQ(resize_only.OutputShape(300, 400), (Shape{100, 133, 3}));
  const Pipeline decode_only({}, Options(DType::kU8));
  EXPECT_FALSE(decode_only.FixedShape().has_value());
  EXPECT_EQ(decode_only.OutputShape(30, 40), (Shape{30, 40, 3}));
  EXPECT_EQ(Pipeline({Transform::Resize(100), Transform::Resize(30, 40)}).FixedShape(),
            (Shape{30, 40, 3}));
}

TEST(Pipeline, DecodeOnlyOutputsTheWholeImage) {
  const std::vector<uint8_t> rgb = SynthesizeImage(41, 29, 60);
  Shape shape;
  const std::vector<uint8_t> out =
      RunBytes(Pipeline({}, Options(DType::kU8)), EncodePng(rgb, 41, 29), 0, 0, 0, &shape);
  EXPECT_EQ(shape, (Shape{29, 41, 3}));
  EXPECT_EQ(out, rgb);
}

// An output larger than the decoder's pixel limit is refused when the
// pipeline is built, not left to fail allocating in every worker.
TEST(Pipeline, RefusesAnAbsurdOutputSize) {
  for (const Transform& t : {Transform::CenterCrop(100000), Transform::RandomResizedCrop(100000),
                             Transform::Resize(100000), Transform::Resize(20000, 20000)}) {
    try {
      Pipeline pipeline({t});
      ADD_FAILURE() << t.ToString() << " was accepted";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(t.ToString()), std::string::npos) << message;
      EXPECT_NE(message.find("over max_pixels 89478485"), std::string::npos) << message;
    }
  }
  // Only the last geometric step sizes the output.
  EXPECT_NO_THROW(Pipeline({Transform::Resize(20000), Transform::CenterCrop(224)}));
  // A raised limit allows it.
  PipelineOptions options;
  options.decode.max_pixels = 100000LL * 100000;
  EXPECT_NO_THROW(Pipeline({Transform::CenterCrop(100000)}, options));
  options.decode.max_pixels = 100;
  EXPECT_THROW(Pipeline({Transform::CenterCrop(11)}, options), Error);
  EXPECT_NO_THROW(Pipeline({Transform::CenterCrop(10)}, options));
  EXPECT_NO_THROW(TrainPipeline(10, DType::kF32, options.decode));
  EXPECT_THROW(TrainPipeline(11, DType::kF32, options.decode), Error);
}

// A one-sided Resize of a sliver makes an output the constructor cannot
// foresee: a failed sample, not an allocation of gigabytes.
TEST(Pipeline, AnOutputOverTheLimitFromASliverIsAFailedSample) {
  const std::vector<uint8_t> png = EncodePng(SynthesizeImage(2000, 1, 61), 2000, 1);
  PipelineOptions options = Options(DType::kU8);
  options.decode.max_pixels = 100000;
  const Pipeline pipeline({Transform::Resize(64)}, options);
  Sample sample;
  SampleContext ctx(0, 0, 0);
  const std::string message = testing::ExpectSampleError(
      [&] { pipeline.Run(png, "sliver.png", sample, "image", ctx); }, "too_large", "sliver.png");
  EXPECT_NE(message.find("128000x64"), std::string::npos) << message;
  EXPECT_EQ(sample.Find("image"), nullptr);
}

TEST(Pipeline, RejectsListsItCannotRun) {
  EXPECT_THROW(Pipeline({Transform::Normalize()}, Options(DType::kU8)), Error);
  EXPECT_THROW(Pipeline({Transform::Normalize(), Transform::Normalize()}), Error);
  EXPECT_THROW(Pipeline({Transform::ToCHW(), Transform::ToCHW()}), Error);
  EXPECT_THROW(Pipeline({}, Options(DType::kI64)), Error);
  Transform bad = Transform::CenterCrop(10);
  bad.height = 0;
  EXPECT_THROW(Pipeline({bad}), Error);
}

// RandomZoomOut places the image whole on the canvas, the rest in its fill:
// found by searching the output for the image's own pixels.
TEST(Pipeline, ZoomOutPlacesTheImageWholeOnAFilledCanvas) {
  const std::vector<uint8_t> rgb = SynthesizeImage(24, 16, 5);
  const std::vector<uint8_t> png = EncodePng(rgb, 24, 16);
  const Pipeline pipeline({Transform::RandomZoomOut({123, 117, 104.9f}, {1.5, 2.5}, 1.0)},
                          Options(DType::kU8));
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Shape shape;
    const std::vector<uint8_t> out = RunBytes(pipeline, png, seed, 0, 0, &shape);
    const int h = static_cast<int>(shape[0]), w = static_cast<int>(shape[1]);
    ASSERT_GE(w, 36);
    ASSERT_LE(w, 60);
    EXPECT_NEAR(w / 24.0, h / 16.0, 1.0 / 16) << "one side factor for both sides";
    int found = 0, fx = 0, fy = 0;
    for (int y = 0; y + 16 <= h; ++y) {
      for (int x = 0; x + 24 <= w; ++x) {
        bool same = true;
        for (int r = 0; r < 16 && same; ++r) {
          same = std::memcmp(&out[(static_cast<size_t>(y + r) * w + x) * 3], &rgb[r * 24 * 3],
                             24 * 3) == 0;
        }
        if (same) ++found, fx = x, fy = y;
      }
    }
    ASSERT_EQ(found, 1) << seed;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        if (x >= fx && x < fx + 24 && y >= fy && y < fy + 16) continue;
        const uint8_t* p = &out[(static_cast<size_t>(y) * w + x) * 3];
        ASSERT_TRUE(p[0] == 123 && p[1] == 117 && p[2] == 104) << x << "," << y;  // 104.9: 104
      }
    }
  }
}

// Listed before a crop (where the references list it), the distort works
// on the whole image: contrast blends with the whole image's mean, not the
// crop's. The output is the crop of the whole image adjusted, its channels
// in one of the six orders (p = 1 also draws a permutation).
TEST(Pipeline, PhotometricDistortBeforeTheCropSeesTheWholeImage) {
  std::vector<uint8_t> rgb(32 * 32 * 3);
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      for (int c = 0; c < 3; ++c) {  // a bright left quarter, outside the crop
        rgb[(y * 32 + x) * 3 + c] = static_cast<uint8_t>(x < 8 ? 200 + c * 10 : 60 + c * 5 + y);
      }
    }
  }
  const std::vector<uint8_t> png = EncodePng(rgb, 32, 32);
  const Pipeline pipeline(
      {Transform::RandomPhotometricDistort({1.3, 1.3}, {1, 1}, {0, 0}, {1, 1}, 1.0),
       Transform::CenterCrop(8)},
      Options(DType::kU8));
  // p = 1 runs every step: brightness 1, saturation 1 and hue 0 too (which
  // round as torchvision's do), contrast before or after the last two.
  auto adjusted = [&](bool contrast_first, int x0, int y0, int size, int w) {
    std::vector<uint8_t> image(static_cast<size_t>(size) * size * 3);
    for (int y = 0; y < size; ++y) {
      std::memcpy(&image[static_cast<size_t>(y) * size * 3], &rgb[((y + y0) * w + x0) * 3],
                  static_cast<size_t>(size) * 3);
    }
    const RgbImageView view{image.data(), size, size};
    AdjustBrightness(view, 1.0);
    if (contrast_first) AdjustContrast(view, 1.3);
    AdjustSaturation(view, 1.0);
    AdjustHue(view, 0.0);
    if (!contrast_first) AdjustContrast(view, 1.3);
    return image;
  };
  auto crop_of = [](const std::vector<uint8_t>& whole) {
    std::vector<uint8_t> crop(8 * 8 * 3);
    for (int y = 0; y < 8; ++y) std::memcpy(&crop[y * 8 * 3], &whole[((y + 12) * 32 + 12) * 3], 24);
    return crop;
  };
  const std::vector<std::vector<uint8_t>> wants = {crop_of(adjusted(true, 0, 0, 32, 32)),
                                                   crop_of(adjusted(false, 0, 0, 32, 32))};
  // What a distort of the crop alone would give: the test tells them apart.
  ASSERT_NE(wants[0], adjusted(true, 12, 12, 8, 32));
  for (uint64_t seed = 0; seed < 6; ++seed) {
    const std::vector<uint8_t> got = RunBytes(pipeline, png, seed, 0, 0);
    bool matched = false;
    for (const std::vector<uint8_t>& want : wants) {
      for (const std::array<int, 3>& order : std::vector<std::array<int, 3>>{
               {0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}) {
        bool same = true;
        for (size_t i = 0; i < 64 && same; ++i) {
          for (int c = 0; c < 3; ++c) same = same && got[i * 3 + c] == want[i * 3 + order[c]];
        }
        matched = matched || same;
      }
    }
    EXPECT_TRUE(matched) << seed;
  }
}

TEST(Pipeline, RefusesDetectionListsItWouldRunOtherwiseThanTorchvision) {
  auto message = [](std::vector<Transform> steps) {
    try {
      Pipeline pipeline(std::move(steps));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Between two geometric steps a distort would see a canvas or a crop's
  // mean that no plan makes.
  EXPECT_NE(message({Transform::RandomZoomOut(), Transform::RandomPhotometricDistort(),
                     Transform::RandomHorizontalFlip()})
                .find("comes after random_photometric_distort"),
            std::string::npos);
  EXPECT_NE(message({Transform::RandomIoUCrop(), Transform::RandomIoUCrop()}).find("listed twice"),
            std::string::npos);
  EXPECT_NE(message({Transform::Normalize(), Transform::RandomPhotometricDistort(),
                     Transform::RandomZoomOut()})
                .find("comes after normalize"),
            std::string::npos);
  EXPECT_NE(message({Transform::CenterCrop(40), Transform::RandomZoomOut({255, 0, 0})})
                .find("pad with different colours"),
            std::string::npos);
  EXPECT_NE(message({Transform::RandomZoomOut({1, 2, 3}), Transform::FixedSizeCrop(8, 8, {3, 2, 1})})
                .find("pad with different colours"),
            std::string::npos);
  // Before every geometric step, or after all of them: as torchvision.
  EXPECT_EQ(message({Transform::RandomPhotometricDistort(), Transform::RandomZoomOut(),
                     Transform::RandomHorizontalFlip(), Transform::RandomPhotometricDistort()}),
            "no error");
  EXPECT_EQ(message({Transform::RandomZoomOut({1, 2, 3}), Transform::FixedSizeCrop(8, 8, {1, 2, 3})}),
            "no error");
}

// The references' resizes: RandomShortestSize scales the short side to
// one of its sizes with the long side capped; ScaleJitter fits the target
// times a drawn factor; FixedSizeCrop crops or pads to its size.
TEST(Pipeline, ShortestSizeScaleJitterAndFixedSizeCropPlanTheReferencesSizes) {
  const Pipeline shortest({Transform::RandomShortestSize({50, 60}, 90)});
  const Pipeline jitter({Transform::ScaleJitter(100, 100, {0.5, 1.5})});
  const Pipeline fixed({Transform::ScaleJitter(100, 100, {0.5, 1.5}),
                        Transform::FixedSizeCrop(100, 100, {7, 7, 7})});
  std::set<int> short_sides;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Rng a(seed, 0, 0), b(seed, 0, 0), c(seed, 0, 0);
    const PipelinePlan s = shortest.Plan(40, 80, a);  // r = min(size / 40, 90 / 80)
    short_sides.insert(s.out_height);
    EXPECT_TRUE((s.out_height == 45 && s.out_width == 90)) << s.out_height << "x" << s.out_width;
    const PipelinePlan j = jitter.Plan(40, 80, b);
    EXPECT_NEAR(double(j.out_width) / j.out_height, 2.0, 0.1);
    EXPECT_GE(j.out_width, static_cast<int>(80 * 1.25 * 0.5) - 1);  // min(100/40, 100/80) = 1.25
    EXPECT_LE(j.out_width, static_cast<int>(80 * 1.25 * 1.5));
    const PipelinePlan f = fixed.Plan(40, 80, c);
    EXPECT_EQ(f.out_height, 100);
    EXPECT_EQ(f.out_width, 100);
  }
  EXPECT_EQ(short_sides.size(), 1u);  // both sizes capped by max_size here
  Rng rng(3, 0, 0);
  std::set<int> drawn;
  for (int i = 0; i < 20; ++i) drawn.insert(shortest.Plan(200, 150, rng).out_width);
  EXPECT_EQ(drawn, (std::set<int>{50, 60}));
  EXPECT_EQ(fixed.FixedShape(), (Shape{100, 100, 3}));
  EXPECT_FALSE(jitter.FixedShape());
  // A target of 512 x 640 (height, width): the references take
  // min(640 / height, 512 / width), 2.56 for a 100 x 200 image (the usual
  // fit would be 3.2).
  const Pipeline wide({Transform::ScaleJitter(512, 640, {1.0, 1.0})});
  const PipelinePlan plan = wide.Plan(100, 200, rng);
  EXPECT_EQ(plan.out_height, 256);
  EXPECT_EQ(plan.out_width, 512);
}

TEST(Pipeline, FixedSizeCropPadsWithItsFillAtTheRightAndBottom) {
  const std::vector<uint8_t> rgb = SynthesizeImage(12, 8, 9);
  const Pipeline pipeline({Transform::FixedSizeCrop(10, 16, {5, 6, 7})}, Options(DType::kU8));
  Shape shape;
  const std::vector<uint8_t> out = RunBytes(pipeline, EncodePng(rgb, 12, 8), 0, 0, 0, &shape);
  ASSERT_EQ(shape, (Shape{10, 16, 3}));
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 16; ++x) {
      const uint8_t* p = &out[(static_cast<size_t>(y) * 16 + x) * 3];
      if (y < 8 && x < 12) {
        EXPECT_EQ(std::memcmp(p, &rgb[(y * 12 + x) * 3], 3), 0) << x << "," << y;
      } else {
        EXPECT_TRUE(p[0] == 5 && p[1] == 6 && p[2] == 7) << x << "," << y;
      }
    }
  }
}

TEST(Pipeline, ZoomOutAndIoUCropMakeTheShapeVary) {
  EXPECT_FALSE(Pipeline({Transform::CenterCrop(8), Transform::RandomZoomOut()}).FixedShape());
  EXPECT_FALSE(Pipeline({Transform::CenterCrop(8), Transform::RandomIoUCrop()}).FixedShape());
  EXPECT_TRUE(Pipeline({Transform::RandomZoomOut(), Transform::CenterCrop(8)}).FixedShape());
  EXPECT_TRUE(Pipeline({Transform::RandomIoUCrop()}).ChoosesFromBoxes());
  EXPECT_FALSE(Pipeline({Transform::RandomZoomOut()}).ChoosesFromBoxes());
}

// RandomIoUCrop chooses from the boxes Plan is given, in source pixels or
// as fractions (YOLO), and the plan says which objects it keeps: those
// centred in the crop, by index among the boxes given.
TEST(Pipeline, IoUCropPlansFromTheBoxesAndSaysWhichItKeeps) {
  const Pipeline pipeline({Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.0})});
  // A box with no height (passed over), one on the left, one on the right,
  // of a 256 x 128 image (fractions exact in binary, so both lists are the
  // same boxes).
  const std::vector<std::array<float, 4>> pixels = {
      {16, 16, 32, 16}, {32, 32, 96, 96}, {160, 32, 224, 64}};
  const std::vector<std::array<float, 4>> fractions = {
      {0.0625f, 0.125f, 0.125f, 0.125f}, {0.125f, 0.25f, 0.375f, 0.75f},
      {0.625f, 0.25f, 0.875f, 0.5f}};
  int left_only = 0, right_only = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    Rng a(seed, 0, 0), b(seed, 0, 0);
    const PipelinePlan plan = pipeline.Plan(128, 256, a, PlanBoxes{pixels});
    const PipelinePlan same = pipeline.Plan(128, 256, b, PlanBoxes{fractions, true});
    ASSERT_EQ(plan.kept_boxes.size(), 3u);
    EXPECT_EQ(plan.kept_boxes, same.kept_boxes);
    EXPECT_EQ(plan.x, same.x);
    EXPECT_EQ(plan.width, same.width);
    EXPECT_EQ(plan.kept_boxes[0], 0);  // no height: never chosen from nor kept
    for (size_t k = 1; k < 3; ++k) {
      const double cx = 0.5 * (pixels[k][0] + pixels[k][2]), cy = 0.5 * (pixels[k][1] + pixels[k][3]);
      const bool inside = plan.x < cx && cx < plan.x + plan.width && plan.y < cy &&
                          cy < plan.y + plan.height;
      EXPECT_EQ(plan.kept_boxes[k], inside ? 1 : 0) << seed << " box " << k;
    }
    ASSERT_TRUE(plan.kept_boxes[1] || plan.kept_boxes[2]) << "a crop holds a centred object";
    left_only += plan.kept_boxes[1] && !plan.kept_boxes[2];
    right_only += !plan.kept_boxes[1] && plan.kept_boxes[2];
    EXPECT_EQ(plan.out_width, static_cast<int>(plan.width));
  }
  EXPECT_GT(left_only, 0);
  EXPECT_GT(right_only, 0);
  Rng rng(1, 0, 0);
  EXPECT_TRUE(pipeline.Plan(128, 256, rng).kept_boxes.empty());  // no boxes: no crop
}

TEST(Pipeline, OutputShapeKnowsFixedSizeCropAndRefusesRandomSizes) {
  EXPECT_EQ(Pipeline({Transform::FixedSizeCrop(100, 100)}).OutputShape(40, 80),
            (Shape{100, 100, 3}));
  EXPECT_THROW(Pipeline({Transform::ScaleJitter(64, 64)}).OutputShape(40, 80), Error);
  EXPECT_THROW(Pipeline({Transform::RandomZoomOut()}).OutputShape(40, 80), Error);
}

}  // namespace
}  // namespace feedline::vision
