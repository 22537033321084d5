// The WebP decoder: lossless exactly, lossy closely, crops natively.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/synth/encode.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/decode.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

TEST(WebpDecoder, LosslessDecodesExactly) {
  const std::vector<uint8_t> rgb = SynthesizeImage(45, 31, 31);
  std::vector<uint8_t> out;
  const DecodedImage image = DecodeImage(EncodeWebp(rgb, 45, 31, 100, true), "l.webp", out);
  EXPECT_EQ(image.width, 45);
  EXPECT_EQ(image.height, 31);
  EXPECT_EQ(out, rgb);
}

TEST(WebpDecoder, LossyDecodesClosely) {
  const std::vector<uint8_t> rgb = SynthesizeImage(64, 48, 32);
  std::vector<uint8_t> out;
  DecodeImage(EncodeWebp(rgb, 64, 48, 95), "q.webp", out);
  EXPECT_LT(testing::MeanAbsDiff(out, rgb), 8.0);
}

TEST(WebpDecoder, RegionDecodeCropsAtEvenCoordinates) {
  const std::vector<uint8_t> rgb = SynthesizeImage(80, 60, 33);
  const std::vector<uint8_t> webp = EncodeWebp(rgb, 80, 60, 100, true);
  std::vector<uint8_t> out;
  DecodeRequest request;
  request.region = Rect{11, 7, 30, 20};
  request.max_scale = 8;  // WebP ignores it
  const DecodedImage image = DecodeImage(webp, "c.webp", out, request);
  EXPECT_EQ(image.scale, 1);
  EXPECT_EQ(image.x, 10);
  EXPECT_EQ(image.y, 6);
  EXPECT_EQ(image.width, 31);
  EXPECT_EQ(image.height, 21);
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width * 3; ++x) {
      ASSERT_EQ(out[y * image.width * 3 + x], rgb[(y + 6) * 80 * 3 + 30 + x]);
    }
  }
}

TEST(WebpDecoder, DamagedFilesAreErrors) {
  std::vector<uint8_t> webp = EncodeWebp(SynthesizeImage(64, 48, 34), 64, 48, 90);
  std::vector<uint8_t> out;
  std::vector<uint8_t> header_only(webp.begin(), webp.begin() + 20);
  testing::ExpectSampleError([&] { DecodeImage(header_only, "h.webp", out); }, "decode", "h.webp");
  for (size_t i = 40; i < webp.size(); ++i) webp[i] ^= 0x3C;
  try {
    DecodeImage(webp, "x.webp", out);  // may decode garbage pixels: VP8 has no checksum
  } catch (const SampleError& e) {
    EXPECT_EQ(e.source(), "x.webp");
  }
}

void PutLittleEndian(std::vector<uint8_t>& out, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void PutChunk(std::vector<uint8_t>& out, const char* fourcc, const std::vector<uint8_t>& payload) {
  out.insert(out.end(), fourcc, fourcc + 4);
  PutLittleEndian(out, static_cast<uint32_t>(payload.size()), 4);
  out.insert(out.end(), payload.begin(), payload.end());
  if (payload.size() % 2 == 1) out.push_back(0);
}

// An animated WebP (the extended format: VP8X, ANIM, one ANMF per frame)
// whose frames are lossless width x height images covering the canvas,
// assembled from still WebP files as the container specification lays out.
std::vector<uint8_t> AnimatedWebp(const std::vector<std::vector<uint8_t>>& frames, int width,
                                  int height) {
  std::vector<uint8_t> chunks;
  std::vector<uint8_t> vp8x = {0x02, 0, 0, 0};  // the animation flag
  PutLittleEndian(vp8x, width - 1, 3);
  PutLittleEndian(vp8x, height - 1, 3);
  PutChunk(chunks, "VP8X", vp8x);
  std::vector<uint8_t> anim = {0xff, 0xff, 0xff, 0xff, 0, 0};  // background, loop forever
  PutChunk(chunks, "ANIM", anim);
  for (const std::vector<uint8_t>& rgb : frames) {
    const std::vector<uint8_t> still = EncodeWebp(rgb, width, height, 100, /*lossless=*/true);
    std::vector<uint8_t> anmf;
    PutLittleEndian(anmf, 0, 3);  // x / 2
    PutLittleEndian(anmf, 0, 3);  // y / 2
    PutLittleEndian(anmf, width - 1, 3);
    PutLittleEndian(anmf, height - 1, 3);
    PutLittleEndian(anmf, 100, 3);                             // duration, ms
    anmf.push_back(0x02);                                      // do not blend, do not dispose
    anmf.insert(anmf.end(), still.begin() + 12, still.end());  // its VP8L chunk
    PutChunk(chunks, "ANMF", anmf);
  }
  std::vector<uint8_t> file = {'R', 'I', 'F', 'F'};
  PutLittleEndian(file, static_cast<uint32_t>(chunks.size() + 4), 4);
  file.insert(file.end(), {'W', 'E', 'B', 'P'});
  file.insert(file.end(), chunks.begin(), chunks.end());
  return file;
}

// Pillow decodes an animated WebP as its first frame; so does feedline.
TEST(WebpDecoder, AnimatedGivesItsFirstFrame) {
  const std::vector<uint8_t> first = SynthesizeImage(48, 34, 35);
  const std::vector<uint8_t> second = SynthesizeImage(48, 34, 36);
  ASSERT_NE(first, second);
  const std::vector<uint8_t> webp = AnimatedWebp({first, second}, 48, 34);
  const ImageInfo info = ReadImageInfo(webp, "anim.webp");
  EXPECT_EQ(info.format, ImageFormat::kWebp);
  EXPECT_EQ(info.width, 48);
  EXPECT_EQ(info.height, 34);
  std::vector<uint8_t> out;
  const DecodedImage image = DecodeImage(webp, "anim.webp", out);
  EXPECT_EQ(image.width, 48);
  EXPECT_EQ(image.height, 34);
  EXPECT_EQ(out, first);

  DecodeRequest request;
  request.region = Rect{5, 3, 20, 10};
  const DecodedImage region = DecodeImage(webp, "anim.webp", out, request);
  EXPECT_EQ(region.x, 5);
  EXPECT_EQ(region.y, 3);
  ASSERT_EQ(region.width, 20);
  ASSERT_EQ(region.height, 10);
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 20 * 3; ++x) {
      ASSERT_EQ(out[y * 20 * 3 + x], first[(y + 3) * 48 * 3 + 15 + x]) << x << ", " << y;
    }
  }
}

TEST(WebpDecoder, AnimatedIsCheckedAgainstThePixelLimitAndForDamage) {
  const std::vector<uint8_t> webp = AnimatedWebp({SynthesizeImage(48, 34, 37)}, 48, 34);
  std::vector<uint8_t> out;
  DecodeOptions small;
  small.max_pixels = 48 * 34 - 1;
  testing::ExpectSampleError([&] { DecodeImage(webp, "big.webp", out, {}, small); }, "too_large",
                             "big.webp");
  // Cut inside the frame's bitstream: the frame cannot be decoded.
  std::vector<uint8_t> cut(webp.begin(), webp.begin() + static_cast<long>(webp.size()) - 20);
  const uint32_t riff_size = static_cast<uint32_t>(cut.size() - 8);
  for (int i = 0; i < 4; ++i) cut[4 + i] = static_cast<uint8_t>(riff_size >> (8 * i));
  testing::ExpectSampleError([&] { DecodeImage(cut, "cut.webp", out); }, "decode", "cut.webp");
}

}  // namespace
}  // namespace feedline::vision
