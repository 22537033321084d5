// The PNG decoder: every color type and bit depth to 8-bit RGB, exactly, and
// damaged files as errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "feedline/vision/decode.h"
#include "feedline/vision/encode.h"
#include "feedline/vision/synth.h"
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

}  // namespace
}  // namespace feedline::vision
