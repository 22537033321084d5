#include "src/vision/mosaic_sample.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/synth/encode.h"

namespace feedline::vision {
namespace {

using ::testing::HasSubstr;

// Four solid images of different sizes and colours, each with one object
// covering all of it (label = the image's number).
constexpr std::array<std::array<int, 2>, 4> kSolidSizes = {{{120, 200}, {90, 90}, {200, 100}, {64, 48}}};
constexpr std::array<std::array<uint8_t, 3>, 4> kSolidColours = {
    {{250, 0, 0}, {0, 250, 0}, {0, 0, 250}, {250, 250, 0}}};

MosaicImages SolidImages() {
  MosaicImages images;
  images.read = [](int64_t image, std::vector<uint8_t>& bytes) {
    const auto [h, w] = kSolidSizes[image];
    std::vector<uint8_t> rgb(static_cast<size_t>(h) * w * 3);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = kSolidColours[image][i % 3];
    bytes = EncodePng(rgb, w, h);
    return "image" + std::to_string(image) + ".png";
  };
  images.objects = [](int64_t image, int height, int width) {
    ImageObject o;
    o.box = {0, 0, static_cast<float>(width), static_cast<float>(height)};
    o.category = image;
    o.area = static_cast<float>(width * height);
    return std::vector<ImageObject>{o};
  };
  return images;
}

// The dataset of SolidImages, 4 images.
void MosaicOf(const Pipeline& pipeline, const MosaicOptions& options, int64_t index,
              uint64_t seed, Sample& out) {
  SampleContext ctx(seed, 0, index);
  std::vector<uint8_t> bytes, canvas;
  MosaicImageCache cache(0);
  WriteMosaicSample(pipeline, options, index, 4, SolidImages(), cache, bytes, canvas, out, ctx);
}

TEST(WriteMosaicSample, EachTileShowsItsImageAndTheRestIsFill) {
  MosaicOptions options;
  options.size = 128;
  const Pipeline pipeline({}, {.dtype = DType::kU8});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Sample out;
    MosaicOf(pipeline, options, 1, seed, out);
    const Tensor& image = *out.Find("image");
    ASSERT_EQ(image.shape(), (Shape{128, 128, 3}));
    const uint8_t* px = image.data<uint8_t>();
    // Where each tile lands, from the same draws.
    Rng rng(seed, 0, 1);
    const MosaicDraw draw = DrawMosaic(options, 1, {}, 4, rng);
    std::vector<int> owner(128 * 128, -1);
    for (int k = 0; k < 4; ++k) {
      const int64_t i = draw.images[k];
      const MosaicTile t = PlanMosaicTile(options, draw, k, kSolidSizes[i][0], kSolidSizes[i][1]);
      for (int y = t.oy0; y < t.oy1; ++y) {
        for (int x = t.ox0; x < t.ox1; ++x) owner[y * 128 + x] = static_cast<int>(i);
      }
    }
    for (int p = 0; p < 128 * 128; ++p) {
      const std::array<uint8_t, 3> want =
          owner[p] < 0 ? std::array<uint8_t, 3>{114, 114, 114} : kSolidColours[owner[p]];
      ASSERT_EQ(px[p * 3], want[0]) << "seed " << seed << " pixel " << p;
      ASSERT_EQ(px[p * 3 + 1], want[1]);
      ASSERT_EQ(px[p * 3 + 2], want[2]);
    }
    // Each box covers its image's colour (edges within a pixel).
    const Tensor& boxes = *out.Find("boxes");
    const Tensor& labels = *out.Find("labels");
    for (int64_t b = 0; b < boxes.shape()[0]; ++b) {
      const float* box = boxes.data<float>() + 4 * b;
      const int64_t label = labels.data<int64_t>()[b];
      for (int y = static_cast<int>(box[1]) + 1; y < static_cast<int>(box[3]) - 1; ++y) {
        for (int x = static_cast<int>(box[0]) + 1; x < static_cast<int>(box[2]) - 1; ++x) {
          ASSERT_EQ(owner[y * 128 + x], label) << "box " << b << " at " << x << "," << y;
        }
      }
    }
    EXPECT_EQ(out.Find("image_size")->data<int64_t>()[1], 128);
  }
}

// The colour each pixel of a size x size mosaic of SolidImages shows.
std::vector<std::array<uint8_t, 3>> SolidMosaicPixels(const MosaicOptions& options,
                                                      const MosaicDraw& draw) {
  const int s = options.size;
  std::vector<std::array<uint8_t, 3>> pixels(static_cast<size_t>(s) * s, {114, 114, 114});
  for (int k = 0; k < draw.tiles; ++k) {
    const int64_t i = draw.images[k];
    const MosaicTile t = PlanMosaicTile(options, draw, k, kSolidSizes[i][0], kSolidSizes[i][1]);
    for (int y = t.oy0; y < t.oy1; ++y) {
      for (int x = t.ox0; x < t.ox1; ++x) pixels[y * s + x] = kSolidColours[i];
    }
  }
  return pixels;
}

TEST(WriteMosaicSample, MixupBlendsTheSampleWithItsPartnersMosaicAndAddsItsObjects) {
  MosaicOptions options;
  options.size = 96;
  options.mixup = 1;
  MosaicOptions alone = options;
  alone.mixup = 0;
  const Pipeline pipeline({}, {.dtype = DType::kU8});
  for (uint64_t seed = 0; seed < 12; ++seed) {
    Sample mixed, own;
    MosaicOf(pipeline, options, 3, seed, mixed);
    MosaicOf(pipeline, alone, 3, seed, own);
    // The draws, as the sample makes them: its own, then the mixup's stream.
    Rng rng(seed, 0, 3);
    const MosaicDraw draw = DrawMosaic(options, 3, {}, 4, rng);
    Rng mix(seed, 0, 3, kMixupStream);
    const MixupDraw m = DrawMixup(options, {}, 4, mix);
    ASSERT_TRUE(m.mixed);
    const MosaicDraw partner = DrawMosaic(options, m.partner, {}, 4, mix);
    const auto a = SolidMosaicPixels(options, draw);
    const auto b = SolidMosaicPixels(options, partner);
    const uint8_t* px = mixed.Find("image")->data<uint8_t>();
    for (size_t p = 0; p < a.size(); ++p) {
      for (int c = 0; c < 3; ++c) {
        const auto want = static_cast<uint8_t>(a[p][c] * m.ratio + b[p][c] * (1 - m.ratio));
        ASSERT_EQ(px[p * 3 + c], want) << "seed " << seed << " pixel " << p;
      }
    }
    // The sample's own objects first, as without mixup, then the partner's.
    const Tensor& boxes = *mixed.Find("boxes");
    const Tensor& own_boxes = *own.Find("boxes");
    const int64_t n = own_boxes.shape()[0];
    ASSERT_GT(boxes.shape()[0], n) << "seed " << seed;
    EXPECT_EQ(std::memcmp(boxes.data<float>(), own_boxes.data<float>(), n * 4 * sizeof(float)), 0);
    const int64_t* labels = mixed.Find("labels")->data<int64_t>();
    for (int64_t k = n; k < boxes.shape()[0]; ++k) {
      const float* box = boxes.data<float>() + 4 * k;
      const int cx = static_cast<int>((box[0] + box[2]) / 2);
      const int cy = static_cast<int>((box[1] + box[3]) / 2);
      EXPECT_EQ(b[cy * 96 + cx], kSolidColours[labels[k]]) << "partner box " << k;
    }
  }
}

TEST(WriteMosaicSample, MixupChangesNoOtherDrawOfTheSample) {
  // With mixup possible but not drawn (p = 1e-9), the sample is the one
  // made without mixup, bit for bit: its draws come from their own stream.
  MosaicOptions options;
  options.size = 64;
  MosaicOptions rare = options;
  rare.mixup = 1e-9;
  const Pipeline pipeline({Transform::RandomHorizontalFlip(0.5)}, {.dtype = DType::kU8});
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Sample a, b;
    MosaicOf(pipeline, options, 0, seed, a);
    MosaicOf(pipeline, rare, 0, seed, b);
    ASSERT_EQ(std::memcmp(a.Find("image")->data<uint8_t>(), b.Find("image")->data<uint8_t>(),
                          64 * 64 * 3),
              0);
    ASSERT_EQ(a.Find("boxes")->shape(), b.Find("boxes")->shape());
  }
}

TEST(WriteMosaicSample, FlipMirrorsTheWholeMosaicAndItsBoxes) {
  MosaicOptions options;
  options.size = 96;
  const Pipeline plain({Transform::RandomHorizontalFlip(0)}, {.dtype = DType::kU8});
  const Pipeline flipped({Transform::RandomHorizontalFlip(1)}, {.dtype = DType::kU8});
  Sample a, b;
  MosaicOf(plain, options, 2, 5, a);
  MosaicOf(flipped, options, 2, 5, b);
  const uint8_t* pa = a.Find("image")->data<uint8_t>();
  const uint8_t* pb = b.Find("image")->data<uint8_t>();
  for (int y = 0; y < 96; ++y) {
    for (int x = 0; x < 96; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(pa[(y * 96 + x) * 3 + c], pb[(y * 96 + 95 - x) * 3 + c]);
      }
    }
  }
  const Tensor& ba = *a.Find("boxes");
  const Tensor& bb = *b.Find("boxes");
  ASSERT_EQ(ba.shape(), bb.shape());
  for (int64_t k = 0; k < ba.shape()[0]; ++k) {
    const float* x = ba.data<float>() + 4 * k;
    const float* y = bb.data<float>() + 4 * k;
    EXPECT_FLOAT_EQ(y[0], 96 - x[2]);
    EXPECT_FLOAT_EQ(y[2], 96 - x[0]);
    EXPECT_FLOAT_EQ(y[1], x[1]);
  }
}

TEST(WriteMosaicSample, WritesTheLayoutAndValuesOfThePipeline) {
  MosaicOptions options;
  options.size = 64;
  options.p = 0;  // the image alone, letterboxed
  const Pipeline pipeline({Transform::ToCHW()}, {.dtype = DType::kF32});
  Sample out;
  MosaicOf(pipeline, options, 0, 1, out);
  const Tensor& image = *out.Find("image");
  ASSERT_EQ(image.shape(), (Shape{3, 64, 64}));
  // The image's colour where its tile landed, 114 / 255 elsewhere.
  Rng rng(1, 0, 0);
  const MosaicDraw draw = DrawMosaic(options, 0, {}, 4, rng);
  ASSERT_EQ(draw.tiles, 1);
  const MosaicTile t = PlanMosaicTile(options, draw, 0, 120, 200);
  const float* v = image.data<float>();
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) {
      const bool inside = x >= t.ox0 && x < t.ox1 && y >= t.oy0 && y < t.oy1;
      ASSERT_FLOAT_EQ(v[y * 64 + x], inside ? 250 / 255.0f : 114 / 255.0f) << x << "," << y;
    }
  }
}

TEST(WriteMosaicSample, AFailingPartnerNamesItsFile) {
  MosaicOptions options;
  options.size = 64;
  const Pipeline pipeline({}, {.dtype = DType::kU8});
  MosaicImages images = SolidImages();
  images.read = [](int64_t image, std::vector<uint8_t>& bytes) {
    bytes.assign(10, 0);  // no image
    return "broken" + std::to_string(image) + ".png";
  };
  SampleContext ctx(0, 0, 0);
  std::vector<uint8_t> bytes, canvas;
  MosaicImageCache cache(1 << 20);
  Sample out;
  try {
    WriteMosaicSample(pipeline, options, 0, 4, images, cache, bytes, canvas, out, ctx);
    FAIL() << "no error";
  } catch (const SampleError& e) {
    EXPECT_THAT(e.what(), HasSubstr("broken0.png"));
  }
}

TEST(WriteMosaicSample, KeptImagesGiveTheSamePixelsAndAreNotDecodedAgain) {
  MosaicOptions options;
  options.size = 96;
  const Pipeline pipeline({}, {.dtype = DType::kU8});
  MosaicImages images = SolidImages();
  int reads = 0;
  const auto read = images.read;
  images.read = [&](int64_t image, std::vector<uint8_t>& bytes) {
    ++reads;
    return read(image, bytes);
  };
  MosaicImageCache kept(64 << 20), none(0);
  std::vector<uint8_t> bytes, canvas;
  for (int64_t index = 0; index < 4; ++index) {
    Sample with_cache, without;
    SampleContext a(3, 0, index), b(3, 0, index);
    WriteMosaicSample(pipeline, options, index, 4, images, kept, bytes, canvas, with_cache, a);
    WriteMosaicSample(pipeline, options, index, 4, images, none, bytes, canvas, without, b);
    const Tensor& x = *with_cache.Find("image");
    const Tensor& y = *without.Find("image");
    ASSERT_EQ(x.bytes(), y.bytes());
    EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.bytes()), 0) << "sample " << index;
    EXPECT_EQ(a.images_decoded() + b.images_decoded(), reads) << "every read is decoded";
    reads = 0;
  }
  // The kept images (4 of them) stay: decoding every sample again reads none.
  EXPECT_GT(kept.bytes(), 0);
  SampleContext again(3, 0, 2);
  Sample out;
  WriteMosaicSample(pipeline, options, 2, 4, images, kept, bytes, canvas, out, again);
  EXPECT_EQ(reads, 0);
  EXPECT_EQ(again.images_decoded(), 0);
}

TEST(WriteMosaicSample, StraightIntoTheOutputEqualsTheCompositePath) {
  // A ColorJitter that changes nothing still needs the RGB composite: the
  // same mosaic through both paths, for each layout, dtype and flip.
  const Transform unchanged = Transform::ColorJitter();
  const std::vector<std::pair<std::vector<Transform>, DType>> outputs = {
      {{}, DType::kU8},
      {{Transform::ToCHW()}, DType::kU8},
      {{Transform::Normalize(), Transform::ToCHW()}, DType::kF32},
      {{Transform::Normalize()}, DType::kF16}};
  MosaicOptions options;
  options.size = 96;
  for (const auto& [steps, dtype] : outputs) {
    for (double flip : {0.0, 1.0}) {
      std::vector<Transform> direct = {Transform::RandomHorizontalFlip(flip)};
      direct.insert(direct.end(), steps.begin(), steps.end());
      std::vector<Transform> composite = {Transform::RandomHorizontalFlip(flip), unchanged};
      composite.insert(composite.end(), steps.begin(), steps.end());
      for (uint64_t seed = 0; seed < 6; ++seed) {
        Sample a, b;
        MosaicOf(Pipeline(direct, {.dtype = dtype}), options, seed % 4, seed, a);
        MosaicOf(Pipeline(composite, {.dtype = dtype}), options, seed % 4, seed, b);
        const Tensor& x = *a.Find("image");
        const Tensor& y = *b.Find("image");
        ASSERT_EQ(x.shape(), y.shape());
        EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.bytes()), 0)
            << DTypeName(dtype) << " flip " << flip << " seed " << seed;
      }
    }
  }
}

TEST(CheckMosaicPipeline, RefusesGeometricStepsButFlips) {
  const MosaicOptions options;
  CheckMosaicPipeline(Pipeline({Transform::RandomHorizontalFlip(0.5), Transform::ToCHW()}),
                      options, "d");
  try {
    CheckMosaicPipeline(Pipeline({Transform::Resize(320)}), options, "YOLO dataset d");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("YOLO dataset d: resize"));
    EXPECT_THAT(e.what(), HasSubstr("cannot follow a mosaic"));
  }
}

TEST(CheckMosaicPipeline, RefusesAnOutputOverMaxPixels) {
  MosaicOptions options;
  options.size = 16384;
  PipelineOptions limited;
  limited.decode.max_pixels = 1 << 20;
  try {
    CheckMosaicPipeline(Pipeline({}, limited), options, "d");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("d: a mosaic of size 16384 makes 268435456 pixels, over "
                                    "max_pixels 1048576"));
  }
}

}  // namespace
}  // namespace feedline::vision
