// The PNG decoder: every color type and bit depth to 8-bit RGB, exactly, and
// damaged files as errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/decode.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

constexpr int kW = 37, kH = 23;

PngEncodeOptions Png(int channels, int bit_depth = 8, bool palette = false,
                     bool interlaced = false) {
  PngEncodeOptions options;
  options.channels = channels;
  options.bit_depth = bit_depth;
  options.palette = palette;
  options.interlaced = interlaced;
  return options;
}

// `count` pixels of `channels` samples each from an RGB image.
std::vector<uint8_t> Samples(const std::vector<uint8_t>& rgb, int channels) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < rgb.size(); i += 3) {
    switch (channels) {
      case 1:
        out.push_back(rgb[i]);
        break;
      case 2:
        out.insert(out.end(), {rgb[i], rgb[i + 1]});
        break;
      case 3:
        out.insert(out.end(), {rgb[i], rgb[i + 1], rgb[i + 2]});
        break;
      default:
        out.insert(out.end(), {rgb[i], rgb[i + 1], rgb[i + 2], rgb[i + 1]});
        break;
    }
  }
  return out;
}

// What the decoder should produce: gray replicated, alpha dropped.
std::vector<uint8_t> ExpectedRgb(const std::vector<uint8_t>& rgb, int channels) {
  std::vector<uint8_t> out = rgb;
  if (channels <= 2) {
    for (size_t i = 0; i < out.size(); i += 3) out[i + 1] = out[i + 2] = out[i];
  }
  return out;
}

class PngDecoderTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(PngDecoderTest, DecodesExactly) {
  const auto [channels, bit_depth, interlaced] = GetParam();
  const std::vector<uint8_t> rgb = SynthesizeImage(kW, kH, 21);
  const std::vector<uint8_t> png =
      EncodePng(Samples(rgb, channels), kW, kH, Png(channels, bit_depth, false, interlaced));
  const ImageInfo info = ReadImageInfo(png, "p.png");
  EXPECT_EQ(info.channels, channels);
  EXPECT_EQ(info.progressive, interlaced);
  std::vector<uint8_t> out;
  const DecodedImage image = DecodeImage(png, "p.png", out);
  EXPECT_EQ(image.width, kW);
  EXPECT_EQ(image.height, kH);
  EXPECT_EQ(out, ExpectedRgb(rgb, channels));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PngDecoderTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Values(8, 16),
                                            ::testing::Bool()));

TEST(PngDecoder, PaletteImagesDecodeExactly) {
  std::vector<uint8_t> rgb(kW * kH * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>((i / 3 % 7) * 40 + i % 3);
  const std::vector<uint8_t> png = EncodePng(rgb, kW, kH, Png(3, 8, /*palette=*/true));
  std::vector<uint8_t> out;
  DecodeImage(png, "pal.png", out);
  EXPECT_EQ(out, rgb);
}

size_t FindChunk(const std::vector<uint8_t>& png, const char* type) {
  for (size_t i = 8; i + 8 <= png.size(); ++i) {
    if (std::memcmp(png.data() + i + 4, type, 4) == 0) return i;
  }
  ADD_FAILURE() << "no " << type << " chunk";
  return 0;
}

TEST(PngDecoder, BadCrcIsAnError) {
  std::vector<uint8_t> png = EncodePng(SynthesizeImage(kW, kH, 22), kW, kH);
  const size_t idat = FindChunk(png, "IDAT");
  const size_t length = (size_t{png[idat]} << 24) | (size_t{png[idat + 1]} << 16) |
                        (size_t{png[idat + 2]} << 8) | png[idat + 3];
  png[idat + 8 + length] ^= 1;
  std::vector<uint8_t> out;
  const std::string message =
      testing::ExpectSampleError([&] { DecodeImage(png, "crc.png", out); }, "decode", "crc.png");
  EXPECT_NE(message.find("checksum"), std::string::npos) << message;
}

TEST(PngDecoder, CorruptImageDataIsAnError) {
  std::vector<uint8_t> png = EncodePng(SynthesizeImage(kW, kH, 23), kW, kH);
  const size_t idat = FindChunk(png, "IDAT");
  // Scramble the zlib stream and fix nothing else: CRC or inflate fails.
  for (size_t i = idat + 8; i < idat + 40; ++i) png[i] ^= 0xA5;
  std::vector<uint8_t> out;
  testing::ExpectSampleError([&] { DecodeImage(png, "z.png", out); }, "decode", "z.png");
}

TEST(PngDecoder, MissingImageDataIsAnError) {
  std::vector<uint8_t> png = EncodePng(SynthesizeImage(kW, kH, 24), kW, kH);
  png.resize(FindChunk(png, "IDAT"));  // header only
  std::vector<uint8_t> out;
  testing::ExpectSampleError([&] { DecodeImage(png, "h.png", out); }, "decode", "h.png");
}

// A region decode returns the region's rows, byte-identical to the full
// decode, and never decompresses the rows below it.
TEST(PngDecoder, RegionDecodeReturnsTheRegionRows) {
  const int w = 64, h = 48;
  const std::vector<uint8_t> rgb = SynthesizeImage(w, h, 25);
  for (int channels : {1, 3, 4}) {
    const std::vector<uint8_t> png = EncodePng(Samples(rgb, channels), w, h, Png(channels));
    const std::vector<uint8_t> expected = ExpectedRgb(rgb, channels);
    for (const Rect region : {Rect{5, 10, 20, 15}, Rect{0, 0, 64, 1}, Rect{3, 40, 10, 8}}) {
      DecodeRequest request;
      request.region = region;
      std::vector<uint8_t> out;
      const DecodedImage image = DecodeImage(png, "r.png", out, request);
      EXPECT_EQ(image.x, 0);
      EXPECT_EQ(image.y, region.y);
      EXPECT_EQ(image.width, w);
      EXPECT_EQ(image.height, region.height);
      const size_t stride = static_cast<size_t>(w) * 3;
      ASSERT_GE(out.size(), stride * region.height);
      EXPECT_EQ(std::memcmp(out.data(), expected.data() + stride * region.y,
                            stride * region.height),
                0)
          << "channels " << channels << " rows " << region.y << "+" << region.height;
    }
  }
}

// Interlaced rows come out of order: the whole image is decoded.
TEST(PngDecoder, InterlacedRegionDecodesTheWholeImage) {
  const std::vector<uint8_t> rgb = SynthesizeImage(kW, kH, 26);
  const std::vector<uint8_t> png = EncodePng(rgb, kW, kH, Png(3, 8, false, /*interlaced=*/true));
  DecodeRequest request;
  request.region = Rect{2, 5, 10, 6};
  std::vector<uint8_t> out;
  const DecodedImage image = DecodeImage(png, "i.png", out, request);
  EXPECT_EQ(image.y, 0);
  EXPECT_EQ(image.height, kH);
  EXPECT_EQ(out, rgb);
}

// A file cut short below the region still serves the region (the rows it
// needs are intact), as a region JPEG decode does; a cut inside the region
// is an error; the whole image is an error either way.
TEST(PngDecoder, RegionDecodeStopsAfterItsLastRow) {
  const int w = 64, h = 200;
  const std::vector<uint8_t> rgb = SynthesizeImage(w, h, 27);
  PngEncodeOptions options = Png(3);
  std::vector<uint8_t> png = EncodePng(rgb, w, h, options);
  png.resize(png.size() * 3 / 4);  // the last rows' data is gone
  DecodeRequest top;
  top.region = Rect{0, 0, w, 20};
  std::vector<uint8_t> out;
  const DecodedImage image = DecodeImage(png, "cut.png", out, top);
  EXPECT_EQ(image.height, 20);
  EXPECT_EQ(std::memcmp(out.data(), rgb.data(), size_t{20} * w * 3), 0);
  DecodeRequest bottom;
  bottom.region = Rect{0, 180, w, 20};
  testing::ExpectSampleError([&] { DecodeImage(png, "cut.png", out, bottom); }, "decode",
                             "cut.png");
  testing::ExpectSampleError([&] { DecodeImage(png, "cut.png", out); }, "decode", "cut.png");
}

// A region that ends at the last row reads the whole image data, so it checks
// the file's tail (the last chunk's CRC) like the whole-image decode.
TEST(PngDecoder, RegionDownToTheLastRowChecksTheTail) {
  std::vector<uint8_t> png = EncodePng(SynthesizeImage(kW, kH, 28), kW, kH);
  const size_t idat = FindChunk(png, "IDAT");
  const size_t length = (size_t{png[idat]} << 24) | (size_t{png[idat + 1]} << 16) |
                        (size_t{png[idat + 2]} << 8) | png[idat + 3];
  png[idat + 8 + length] ^= 1;  // the CRC after the pixels
  std::vector<uint8_t> out;
  DecodeRequest bottom;
  bottom.region = Rect{0, kH - 5, kW, 5};
  testing::ExpectSampleError([&] { DecodeImage(png, "tail.png", out, bottom); }, "decode",
                             "tail.png");
  DecodeRequest top;  // stops before the damage: decodes
  top.region = Rect{0, 0, kW, 5};
  EXPECT_EQ(DecodeImage(png, "tail.png", out, top).height, 5);
}

}  // namespace
}  // namespace feedline::vision
