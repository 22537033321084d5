#include "feedline/synth/encode.h"

#include <gtest/gtest.h>

#include <vector>

#include "feedline/error.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/decode.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

TEST(EncodeJpeg, WritesTheRequestedLayout) {
  const std::vector<uint8_t> rgb = SynthesizeImage(64, 48, 61);
  JpegEncodeOptions options;
  options.progressive = true;
  const ImageInfo progressive = ReadImageInfo(EncodeJpeg(rgb, 64, 48, options), "p");
  EXPECT_TRUE(progressive.progressive);
  options = {};
  options.cmyk = true;
  EXPECT_EQ(ReadImageInfo(EncodeJpeg(rgb, 64, 48, options), "c").channels, 4);
  // Higher quality: larger file, closer pixels.
  options = {};
  options.quality = 60;
  const std::vector<uint8_t> low = EncodeJpeg(rgb, 64, 48, options);
  options.quality = 95;
  const std::vector<uint8_t> high = EncodeJpeg(rgb, 64, 48, options);
  EXPECT_LT(low.size(), high.size());
  std::vector<uint8_t> a, b;
  DecodeImage(low, "l", a);
  DecodeImage(high, "h", b);
  EXPECT_LT(testing::MeanAbsDiff(b, rgb), testing::MeanAbsDiff(a, rgb));
}

TEST(EncodeJpeg, RejectsBadArguments) {
  const std::vector<uint8_t> rgb(30);
  EXPECT_THROW(EncodeJpeg(rgb, 0, 10), Error);
  EXPECT_THROW(EncodeJpeg(rgb, 10, 10), Error);  // too few bytes
  JpegEncodeOptions options;
  options.quality = 0;
  EXPECT_THROW(EncodeJpeg(rgb, 2, 5, options), Error);
  options = {};
  options.grayscale = options.cmyk = true;
  EXPECT_THROW(EncodeJpeg(rgb, 2, 5, options), Error);
}

TEST(EncodePng, RejectsBadArguments) {
  const std::vector<uint8_t> rgb(300);
  PngEncodeOptions options;
  options.channels = 5;
  EXPECT_THROW(EncodePng(rgb, 10, 10, options), Error);
  options = {};
  options.bit_depth = 12;
  EXPECT_THROW(EncodePng(rgb, 10, 10, options), Error);
  options = {};
  options.palette = true;
  const std::vector<uint8_t> many = SynthesizeImage(64, 64, 62);  // > 256 colors
  EXPECT_THROW(EncodePng(many, 64, 64, options), Error);
}

TEST(EncodeWebp, RoundTripsLossless) {
  const std::vector<uint8_t> rgb = SynthesizeImage(20, 10, 63);
  std::vector<uint8_t> out;
  DecodeImage(EncodeWebp(rgb, 20, 10, 100, true), "w", out);
  EXPECT_EQ(out, rgb);
  EXPECT_THROW(EncodeWebp(rgb, 20, 11), Error);
}

}  // namespace
}  // namespace feedline::vision
