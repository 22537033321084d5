// The JPEG decoder: color spaces, subsamplings, region decode (exact against
// a full decode) and DCT scaling, strictness about damaged data.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/rng.h"
#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/decode.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

struct JpegKind {
  const char* name;
  ChromaSubsampling subsampling;
  bool progressive;
  bool grayscale;
  bool cmyk;
  bool ycck;
};

const JpegKind kKinds[] = {
    {"420", ChromaSubsampling::k420, false, false, false, false},
    {"422", ChromaSubsampling::k422, false, false, false, false},
    {"444", ChromaSubsampling::k444, false, false, false, false},
    {"420_progressive", ChromaSubsampling::k420, true, false, false, false},
    {"444_progressive", ChromaSubsampling::k444, true, false, false, false},
    {"gray", ChromaSubsampling::k420, false, true, false, false},
    {"gray_progressive", ChromaSubsampling::k420, true, true, false, false},
    {"cmyk", ChromaSubsampling::k444, false, false, true, false},
    {"ycck", ChromaSubsampling::k444, false, false, true, true},
};

JpegEncodeOptions Options(const JpegKind& kind, int quality = 92) {
  JpegEncodeOptions options;
  options.quality = quality;
  options.subsampling = kind.subsampling;
  options.progressive = kind.progressive;
  options.grayscale = kind.grayscale;
  options.cmyk = kind.cmyk;
  options.ycck = kind.ycck;
  return options;
}

class JpegDecoderTest : public ::testing::TestWithParam<JpegKind> {};

TEST_P(JpegDecoderTest, DecodesCloseToTheSourcePixels) {
  const JpegKind& kind = GetParam();
  const int w = 123, h = 77;  // not multiples of the MCU size
  std::vector<uint8_t> rgb = SynthesizeImage(w, h, 11);
  if (kind.grayscale) {  // compare against the gray the encoder wrote
    for (size_t i = 0; i < rgb.size(); i += 3) {
      const uint8_t g =
          static_cast<uint8_t>((299 * rgb[i] + 587 * rgb[i + 1] + 114 * rgb[i + 2] + 500) / 1000);
      rgb[i] = rgb[i + 1] = rgb[i + 2] = g;
    }
  }
  const std::vector<uint8_t> jpeg = EncodeJpeg(rgb, w, h, Options(kind, 95));
  std::vector<uint8_t> out;
  const DecodedImage image = DecodeImage(jpeg, kind.name, out);
  EXPECT_EQ(image.info.channels, kind.grayscale ? 1 : kind.cmyk ? 4 : 3);
  ASSERT_EQ(image.width, w);
  ASSERT_EQ(image.height, h);
  ASSERT_EQ(out.size(), rgb.size());
  // Textured content at q95: a few levels of coding error; a wrong color
  // conversion (CMYK not inverted, channels swapped) would be ~100.
  EXPECT_LT(testing::MeanAbsDiff(out, rgb), 6.0) << kind.name;
  if (kind.grayscale) {
    for (size_t i = 0; i < out.size(); i += 3) {
      ASSERT_EQ(out[i], out[i + 1]);
      ASSERT_EQ(out[i], out[i + 2]);
    }
  }
}

TEST_P(JpegDecoderTest, RegionDecodeEqualsTheFullDecode) {
  const JpegKind& kind = GetParam();
  const int w = 301, h = 211;
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(w, h, 12, Options(kind));
  std::vector<uint8_t> full, part;
  DecodeImage(jpeg, "full", full);
  Rng rng(5, 0, 0);
  for (int trial = 0; trial < 12; ++trial) {
    Rect region;
    region.x = static_cast<int>(rng.UniformInt(w - 1));
    region.y = static_cast<int>(rng.UniformInt(h - 1));
    region.width = 1 + static_cast<int>(rng.UniformInt(w - region.x));
    region.height = 1 + static_cast<int>(rng.UniformInt(h - region.y));
    DecodeRequest request;
    request.region = region;
    const DecodedImage image = DecodeImage(jpeg, "part", part, request);
    ASSERT_EQ(image.scale, 1);
    // The decoded area covers the region...
    ASSERT_LE(image.x, region.x);
    ASSERT_LE(image.y, region.y);
    ASSERT_GE(image.x + image.width, region.x + region.width);
    ASSERT_GE(image.y + image.height, region.y + region.height);
    // ...with rows skipped: only the region's rows were decoded.
    EXPECT_EQ(image.y, region.y);
    EXPECT_EQ(image.height, region.height);
    ASSERT_EQ(part.size(), static_cast<size_t>(image.width) * image.height * 3);
    // Every pixel of the region is identical to the full decode's.
    for (int y = region.y; y < region.y + region.height; ++y) {
      const uint8_t* a = full.data() + (static_cast<size_t>(y) * w + region.x) * 3;
      const uint8_t* b =
          part.data() + (static_cast<size_t>(y - image.y) * image.width + region.x - image.x) * 3;
      ASSERT_EQ(std::vector<uint8_t>(a, a + region.width * 3),
                std::vector<uint8_t>(b, b + region.width * 3))
          << kind.name << " row " << y << " of region " << region.x << "," << region.y << " "
          << region.width << "x" << region.height;
    }
  }
}

TEST_P(JpegDecoderTest, ScaledRegionDecodeEqualsTheScaledFullDecode) {
  const JpegKind& kind = GetParam();
  const int w = 517, h = 389;
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(w, h, 13, Options(kind));
  for (int scale : {2, 4, 8}) {
    std::vector<uint8_t> full, part;
    DecodeRequest whole;
    whole.max_scale = scale;
    const DecodedImage all = DecodeImage(jpeg, "full", full, whole);
    ASSERT_EQ(all.scale, scale);
    ASSERT_EQ(all.width, (w + scale - 1) / scale);  // libjpeg rounds up
    ASSERT_EQ(all.height, (h + scale - 1) / scale);
    DecodeRequest request;
    request.region = Rect{200, 150, 250, 120};
    request.max_scale = scale;
    const DecodedImage image = DecodeImage(jpeg, "part", part, request);
    ASSERT_EQ(image.scale, scale);
    const int x0 = 200 / scale, y0 = 150 / scale;
    const int x1 = (450 + scale - 1) / scale, y1 = (270 + scale - 1) / scale;
    ASSERT_LE(image.x, x0);
    ASSERT_EQ(image.y, y0);
    ASSERT_GE(image.x + image.width, x1);
    ASSERT_EQ(image.y + image.height, y1);
    for (int y = y0; y < y1; ++y) {
      const uint8_t* a = full.data() + (static_cast<size_t>(y) * all.width + x0) * 3;
      const uint8_t* b =
          part.data() + (static_cast<size_t>(y - image.y) * image.width + x0 - image.x) * 3;
      ASSERT_EQ(std::vector<uint8_t>(a, a + (x1 - x0) * 3),
                std::vector<uint8_t>(b, b + (x1 - x0) * 3))
          << kind.name << " scale " << scale << " row " << y;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, JpegDecoderTest, ::testing::ValuesIn(kKinds),
                         [](const ::testing::TestParamInfo<JpegKind>& info) {
                           return std::string(info.param.name);
                         });

TEST(JpegDecoder, MaxScaleRoundsDownToASupportedScale) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(160, 96, 14);
  std::vector<uint8_t> out;
  for (auto [asked, got] : {std::pair{1, 1}, {2, 2}, {3, 2}, {4, 4}, {7, 4}, {8, 8}, {64, 8}}) {
    DecodeRequest request;
    request.max_scale = asked;
    const DecodedImage image = DecodeImage(jpeg, "x", out, request);
    EXPECT_EQ(image.scale, got) << "max_scale " << asked;
    EXPECT_EQ(image.width, (160 + got - 1) / got);
  }
}

TEST(JpegDecoder, CmykIsConvertedWithAdobeInversion) {
  // Flat colors survive JPEG almost exactly, so the conversion shows.
  const int w = 32, h = 16;
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < rgb.size(); i += 3) {
    const bool left = (i / 3) % w < 16;
    rgb[i] = left ? 200 : 30;
    rgb[i + 1] = left ? 100 : 30;
    rgb[i + 2] = left ? 50 : 220;
  }
  JpegEncodeOptions options;
  options.quality = 100;
  options.cmyk = true;
  std::vector<uint8_t> out;
  DecodeImage(EncodeJpeg(rgb, w, h, options), "cmyk", out);
  // Away from the edge between the two halves.
  for (int y = 0; y < h; ++y) {
    for (int x : {2, 29}) {
      const uint8_t* p = out.data() + (static_cast<size_t>(y) * w + x) * 3;
      const uint8_t* q = rgb.data() + (static_cast<size_t>(y) * w + x) * 3;
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(p[c], q[c], 4) << "x " << x << " c " << c;
    }
  }
}

// A JPEG with stray bytes between two header segments: libjpeg warns
// "Corrupt JPEG data: 3 extraneous bytes before marker 0xdb" and decodes on.
std::vector<uint8_t> WithExtraneousBytes() {
  std::vector<uint8_t> jpeg = SynthesizeJpeg(64, 64, 15);
  // SOI, then the JFIF APP0 segment: FF E0 and its length.
  EXPECT_EQ(jpeg[2], 0xFF);
  EXPECT_EQ(jpeg[3], 0xE0);
  const size_t next = 4 + ((size_t{jpeg[4]} << 8) | jpeg[5]);
  jpeg.insert(jpeg.begin() + static_cast<ptrdiff_t>(next), {0x12, 0x34, 0x56});
  return jpeg;
}

TEST(JpegDecoder, WarningsAreErrorsWhenStrict) {
  const std::vector<uint8_t> jpeg = WithExtraneousBytes();
  std::vector<uint8_t> out;
  const std::string message =
      testing::ExpectSampleError([&] { DecodeImage(jpeg, "warn.jpg", out); }, "decode", "warn.jpg");
  EXPECT_NE(message.find("extraneous"), std::string::npos) << message;
}

TEST(JpegDecoder, WarningsAreIgnoredWhenNotStrict) {
  const std::vector<uint8_t> jpeg = WithExtraneousBytes();
  DecodeOptions options;
  options.jpeg_strict = false;
  std::vector<uint8_t> out;
  EXPECT_EQ(DecodeImage(jpeg, "warn.jpg", out, {}, options).width, 64);
}

TEST(JpegDecoder, TruncationIsAnErrorEvenWhenNotStrict) {
  std::vector<uint8_t> jpeg = SynthesizeJpeg(128, 128, 16);
  jpeg.resize(jpeg.size() / 2);
  DecodeOptions options;
  options.jpeg_strict = false;
  std::vector<uint8_t> out;
  const std::string message = testing::ExpectSampleError(
      [&] { DecodeImage(jpeg, "half.jpg", out, {}, options); }, "decode", "half.jpg");
  EXPECT_NE(message.find("Premature end"), std::string::npos) << message;
}

TEST(JpegDecoder, DamagedHeaderIsAnError) {
  std::vector<uint8_t> jpeg = SynthesizeJpeg(32, 32, 17);
  // The frame header's sample precision (byte 4 after the SOF0 marker).
  for (size_t i = 2; i + 4 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 4] = 3;
      break;
    }
  }
  std::vector<uint8_t> out;
  testing::ExpectSampleError([&] { DecodeImage(jpeg, "bad.jpg", out); }, "decode", "bad.jpg");
  testing::ExpectSampleError([&] { ReadImageInfo(jpeg, "bad.jpg"); }, "decode", "bad.jpg");
}

TEST(JpegDecoder, FastIdctIsCloseToTheAccurateOne) {
  const std::vector<uint8_t> jpeg = SynthesizeJpeg(96, 96, 18);
  std::vector<uint8_t> accurate, fast;
  DecodeImage(jpeg, "x", accurate);
  DecodeOptions options;
  options.jpeg_fast_idct = true;
  DecodeImage(jpeg, "x", fast, {}, options);
  const double diff = testing::MeanAbsDiff(accurate, fast);
  EXPECT_GT(diff, 0.0);  // it is a different IDCT
  EXPECT_LT(diff, 1.5);
}

}  // namespace
}  // namespace feedline::vision
