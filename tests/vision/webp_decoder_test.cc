// The WebP decoder: lossless exactly, lossy closely, crops natively.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/vision/decode.h"
#include "feedline/vision/encode.h"
#include "feedline/vision/synth.h"
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

}  // namespace
}  // namespace feedline::vision
