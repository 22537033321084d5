#include "feedline/vision/decode.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

using testing::ExpectSampleError;

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

JpegEncodeOptions Progressive() {
  JpegEncodeOptions options;
  options.progressive = true;
  return options;
}

JpegEncodeOptions Grayscale() {
  JpegEncodeOptions options;
  options.grayscale = true;
  return options;
}

JpegEncodeOptions HighQuality444() {
  JpegEncodeOptions options;
  options.quality = 98;
  options.subsampling = ChromaSubsampling::k444;
  return options;
}

TEST(DetectFormat, ReadsMagicBytes) {
  const std::vector<uint8_t> rgb = SynthesizeImage(16, 8, 1);
  EXPECT_EQ(DetectFormat(EncodeJpeg(rgb, 16, 8)), ImageFormat::kJpeg);
  EXPECT_EQ(DetectFormat(EncodePng(rgb, 16, 8)), ImageFormat::kPng);
  EXPECT_EQ(DetectFormat(EncodeWebp(rgb, 16, 8)), ImageFormat::kWebp);
  EXPECT_EQ(DetectFormat(Bytes("GIF89a....")), ImageFormat::kUnknown);
  EXPECT_EQ(DetectFormat(Bytes("RIFF1234WAVE")), ImageFormat::kUnknown);
  EXPECT_EQ(DetectFormat({}), ImageFormat::kUnknown);
  EXPECT_EQ(DetectFormat(Bytes("\xff\xd8")), ImageFormat::kUnknown);  // too short
  EXPECT_STREQ(ImageFormatName(ImageFormat::kPng), "png");
}

TEST(ReadImageInfo, ReportsHeaderOfEachFormat) {
  const std::vector<uint8_t> rgb = SynthesizeImage(40, 24, 2);
  ImageInfo jpeg = ReadImageInfo(EncodeJpeg(rgb, 40, 24, Progressive()), "a.jpg");
  EXPECT_EQ(jpeg.format, ImageFormat::kJpeg);
  EXPECT_EQ(jpeg.width, 40);
  EXPECT_EQ(jpeg.height, 24);
  EXPECT_EQ(jpeg.channels, 3);
  EXPECT_TRUE(jpeg.progressive);
  ImageInfo gray = ReadImageInfo(EncodeJpeg(rgb, 40, 24, Grayscale()), "g.jpg");
  EXPECT_EQ(gray.channels, 1);
  EXPECT_FALSE(gray.progressive);
  ImageInfo png = ReadImageInfo(EncodePng(rgb, 40, 24), "a.png");
  EXPECT_EQ(png.format, ImageFormat::kPng);
  EXPECT_EQ(png.width, 40);
  EXPECT_EQ(png.height, 24);
  ImageInfo webp = ReadImageInfo(EncodeWebp(rgb, 40, 24), "a.webp");
  EXPECT_EQ(webp.format, ImageFormat::kWebp);
  EXPECT_EQ(webp.width, 40);
  EXPECT_EQ(webp.height, 24);
}

TEST(DecodeImage, FullDecodeOfEachFormat) {
  const std::vector<uint8_t> rgb = SynthesizeImage(33, 17, 3);
  std::vector<uint8_t> out;
  for (const std::vector<uint8_t>& data :
       {EncodeJpeg(rgb, 33, 17, HighQuality444()), EncodePng(rgb, 33, 17),
        EncodeWebp(rgb, 33, 17, 100, /*lossless=*/true)}) {
    DecodedImage image = DecodeImage(data, "x", out);
    EXPECT_EQ(image.width, 33);
    EXPECT_EQ(image.height, 17);
    EXPECT_EQ(image.x, 0);
    EXPECT_EQ(image.y, 0);
    EXPECT_EQ(image.scale, 1);
    ASSERT_EQ(out.size(), rgb.size());
    EXPECT_LT(testing::MeanAbsDiff(out, rgb), 3.0) << ImageFormatName(image.info.format);
  }
}

TEST(DecodeImage, EmptyDataIsAFormatError) {
  std::vector<uint8_t> out;
  const std::string message =
      ExpectSampleError([&] { DecodeImage({}, "empty.jpg", out); }, "format", "empty.jpg");
  EXPECT_NE(message.find("empty"), std::string::npos) << message;
  ExpectSampleError([&] { ReadImageInfo({}, "empty.jpg"); }, "format", "empty.jpg");
}

TEST(DecodeImage, GarbageIsAFormatErrorShowingTheFirstBytes) {
  std::vector<uint8_t> out;
  const std::string message = ExpectSampleError(
      [&] { DecodeImage(Bytes("\x01\x02hello world"), "junk.jpg", out); }, "format", "junk.jpg");
  EXPECT_NE(message.find("01 02 68"), std::string::npos) << message;
}

TEST(DecodeImage, UnsupportedFormatsAreNamed) {
  std::vector<uint8_t> out;
  const std::string gif = ExpectSampleError(
      [&] { DecodeImage(Bytes("GIF89a\x01\x00\x01\x00"), "anim.jpg", out); }, "format", "anim.jpg");
  EXPECT_NE(gif.find("GIF"), std::string::npos) << gif;
  const std::string bmp = ExpectSampleError(
      [&] { DecodeImage(Bytes("BM\x36\x00\x00\x00"), "x.png", out); }, "format", "x.png");
  EXPECT_NE(bmp.find("BMP"), std::string::npos) << bmp;
}

TEST(DecodeImage, PixelLimitIsCheckedFromTheHeader) {
  const std::vector<uint8_t> rgb = SynthesizeImage(64, 48, 4);
  DecodeOptions options;
  options.max_pixels = 64 * 48 - 1;
  std::vector<uint8_t> out;
  for (const std::vector<uint8_t>& data :
       {EncodeJpeg(rgb, 64, 48), EncodePng(rgb, 64, 48), EncodeWebp(rgb, 64, 48)}) {
    const std::string message =
        ExpectSampleError([&] { DecodeImage(data, "big", out, {}, options); }, "too_large", "big");
    EXPECT_NE(message.find("3072 pixels"), std::string::npos) << message;
    EXPECT_NE(message.find("3071"), std::string::npos) << message;
    EXPECT_TRUE(out.empty()) << "allocated before the check";
    ExpectSampleError([&] { ReadImageInfo(data, "big", options); }, "too_large", "big");
  }
  options.max_pixels = 64 * 48;
  EXPECT_EQ(DecodeImage(EncodePng(rgb, 64, 48), "ok", out, {}, options).width, 64);
}

TEST(DecodeImage, DefaultPixelLimitIsPillows) {
  EXPECT_EQ(DecodeOptions().max_pixels, 89478485);
  // A PNG header claiming 20000 x 20000: refused before any pixel is read.
  std::vector<uint8_t> png = EncodePng(SynthesizeImage(8, 8, 5), 8, 8);
  // IHDR data starts at byte 16: width and height, big-endian. The CRC no
  // longer matches, so the error may be either; both name the file.
  png[16] = 0;
  png[17] = 0;
  png[18] = 0x4E;
  png[19] = 0x20;
  png[20] = 0;
  png[21] = 0;
  png[22] = 0x4E;
  png[23] = 0x20;
  std::vector<uint8_t> out;
  try {
    DecodeImage(png, "huge.png", out);
    ADD_FAILURE() << "decoded a forged header";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.source(), "huge.png");
  }
  EXPECT_TRUE(out.empty());
}

TEST(DecodeImage, TruncatedFilesOfEachFormatFail) {
  const std::vector<uint8_t> rgb = SynthesizeImage(96, 64, 6);
  std::vector<uint8_t> out;
  for (const std::vector<uint8_t>& full :
       {EncodeJpeg(rgb, 96, 64), EncodeJpeg(rgb, 96, 64, Progressive()), EncodePng(rgb, 96, 64),
        EncodeWebp(rgb, 96, 64)}) {
    for (double keep : {0.1, 0.5, 0.9}) {
      std::vector<uint8_t> cut(full.begin(),
                               full.begin() + static_cast<ptrdiff_t>(full.size() * keep));
      ExpectSampleError([&] { DecodeImage(cut, "cut", out); }, "decode", "cut");
    }
  }
}

TEST(DecodeImage, RegionIsClampedToTheImage) {
  const std::vector<uint8_t> rgb = SynthesizeImage(48, 40, 7);
  const std::vector<uint8_t> png = EncodePng(rgb, 48, 40);
  std::vector<uint8_t> out;
  DecodeRequest request;
  request.region = Rect{-10, -10, 1000, 1000};
  DecodedImage image = DecodeImage(png, "p", out, request);
  EXPECT_EQ(image.width, 48);
  EXPECT_EQ(image.height, 40);
  EXPECT_EQ(out, rgb);
}

}  // namespace
}  // namespace feedline::vision
