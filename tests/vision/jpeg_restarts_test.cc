// Restart markers added at pack time (src/vision/jpeg_restarts.h) and the
// decoder entering a JPEG at the MCU row above a crop: the pixels must be
// byte for byte those of the original file decoded whole.
#include "src/vision/jpeg_restarts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/synth/encode.h"
#include "feedline/vision/decode.h"

namespace feedline::vision {
namespace {

using internal::AddJpegRestarts;
using internal::JpegRestartOptions;
using internal::FindJpegRestarts;
using internal::JpegLayout;
using internal::ParseJpegLayout;

// A photo-like image: gradients, edges and noise, so every MCU row has
// real entropy-coded content in luma and chroma.
std::vector<uint8_t> TestImage(int width, int height, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      const int noise = static_cast<int>(rng() % 48);
      p[0] = static_cast<uint8_t>((x * 255 / width + noise) & 255);
      p[1] = static_cast<uint8_t>(((x / 13 + y / 7) % 2 ? 200 : 40) + noise / 2);
      p[2] = static_cast<uint8_t>((y * 255 / height + 3 * noise) & 255);
    }
  }
  return rgb;
}

struct Case {
  const char* name;
  int width, height;
  JpegEncodeOptions options;
};

std::vector<Case> Cases() {
  JpegEncodeOptions c420, c444, c422, gray;
  c420.subsampling = ChromaSubsampling::k420;
  c444.subsampling = ChromaSubsampling::k444;
  c422.subsampling = ChromaSubsampling::k422;
  gray.grayscale = true;
  return {{"420_multiple", 320, 240, c420}, {"420_odd", 333, 251, c420},
          {"444_odd", 301, 199, c444},      {"422_odd", 257, 130, c422},
          {"gray_odd", 250, 171, gray},     {"420_tall", 97, 517, c420}};
}

// The requested region's pixels out of a decoded image, at the decode's
// scale: columns [x / s, ceil((x + w) / s)), rows likewise.
std::vector<uint8_t> RegionPixels(const DecodedImage& image, const std::vector<uint8_t>& pixels,
                                  const Rect& region) {
  const int s = image.scale;
  const int x0 = region.x / s, x1 = (region.x + region.width + s - 1) / s;
  const int y0 = region.y / s, y1 = (region.y + region.height + s - 1) / s;
  std::vector<uint8_t> out;
  for (int y = y0; y < y1; ++y) {
    const int row = y - image.y;
    const int col = x0 - image.x;
    EXPECT_GE(row, 0);
    EXPECT_LT(row, image.height);
    EXPECT_GE(col, 0);
    EXPECT_LE(col + (x1 - x0), image.width);
    if (row < 0 || row >= image.height || col < 0 || col + (x1 - x0) > image.width) return {};
    const uint8_t* p = &pixels[(static_cast<size_t>(row) * image.width + col) * 3];
    out.insert(out.end(), p, p + static_cast<size_t>(x1 - x0) * 3);
  }
  return out;
}

// Markers every MCU row, every 2 rows (whole-row intervals: the window
// reaches the last row), and every few MCUs (the window cuts columns too).
std::vector<JpegRestartOptions> Intervals() { return {{1, 0}, {2, 0}, {1, 2}, {1, 4}}; }

std::string Name(const JpegRestartOptions& o) {
  return o.mcus > 0 ? std::to_string(o.mcus) + " mcus" : std::to_string(o.rows) + " rows";
}

TEST(JpegRestartsTest, RewriteKeepsEveryPixelAndListsTheRowStarts) {
  for (const Case& c : Cases()) {
   for (const JpegRestartOptions& interval : Intervals()) {
    SCOPED_TRACE(std::string(c.name) + ", " + Name(interval));
    const std::vector<uint8_t> original =
        EncodeJpeg(TestImage(c.width, c.height, 7), c.width, c.height, c.options);
    std::vector<uint8_t> rewritten;
    std::vector<uint32_t> offsets;
    ASSERT_TRUE(AddJpegRestarts(original, interval, rewritten, offsets));
    JpegLayout layout;
    ASSERT_TRUE(ParseJpegLayout(rewritten, layout));
    if (interval.mcus == 0) {
      EXPECT_EQ(layout.restart_interval, layout.mcus_per_row * interval.rows);
    } else {
      // A divisor of the row near the wish, or whole rows when there is
      // none (257 pixels of 4:2:2 are 17 MCUs, a prime).
      EXPECT_EQ(layout.mcus_per_row % layout.restart_interval, 0);
      if (layout.restart_interval != layout.mcus_per_row) {
        EXPECT_LE(layout.restart_interval, 2 * interval.mcus);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(offsets.size()), layout.row_starts());
    EXPECT_EQ(static_cast<int>(offsets.size()),
              (layout.mcu_rows + (interval.mcus ? 0 : interval.rows - 1)) /
                  (interval.mcus ? 1 : interval.rows));
    std::vector<uint32_t> found;
    ASSERT_TRUE(FindJpegRestarts(rewritten, found));
    EXPECT_EQ(found, offsets);
    const int per_row = std::max(1, layout.intervals_per_row());
    for (size_t i = 1; i < offsets.size(); ++i) {
      EXPECT_EQ(rewritten[offsets[i] - 2], 0xFF);
      EXPECT_EQ(rewritten[offsets[i] - 1], 0xD0 + ((i * per_row - 1) & 7));
    }
    std::vector<uint8_t> a, b;
    const DecodedImage da = DecodeImage(original, "original", a);
    const DecodedImage db = DecodeImage(rewritten, "rewritten", b);
    EXPECT_EQ(da.width, db.width);
    EXPECT_EQ(da.height, db.height);
    EXPECT_TRUE(a == b) << "the full decode differs";
   }
  }
}

// Random crops of `rewritten` decoded through its restart offsets at DCT
// scales 1/1 to 1/8 give byte for byte the pixels of `original` decoded
// whole at the same scale and cropped.
void ExpectCropsMatchTheWholeDecode(const std::vector<uint8_t>& original,
                                    const std::vector<uint8_t>& rewritten,
                                    const std::vector<uint32_t>& offsets, int width, int height,
                                    int trials, std::mt19937& rng) {
  for (int scale : {1, 2, 4, 8}) {
    DecodeRequest whole_request;
    whole_request.max_scale = scale;
    std::vector<uint8_t> whole_pixels;
    const DecodedImage whole = DecodeImage(original, "original", whole_pixels, whole_request);
    for (int trial = 0; trial < trials; ++trial) {
      Rect region;
      region.width = 1 + static_cast<int>(rng() % width);
      region.height = 1 + static_cast<int>(rng() % height);
      region.x = static_cast<int>(rng() % (width - region.width + 1));
      region.y = static_cast<int>(rng() % (height - region.height + 1));
      if (trial == 0) region.y = height - region.height;  // down to the last row
      if (trial == 1) region.y = 16;                      // at an MCU row's top
      if (trial == 1) region.height = std::min(region.height, height - 16);
      SCOPED_TRACE("scale " + std::to_string(scale) + " region " + std::to_string(region.x) +
                   "," + std::to_string(region.y) + " " + std::to_string(region.width) + "x" +
                   std::to_string(region.height));
      DecodeRequest request;
      request.region = region;
      request.max_scale = scale;
      request.jpeg_restarts = offsets;
      std::vector<uint8_t> pixels;
      const DecodedImage image = DecodeImage(rewritten, "rewritten", pixels, request);
      EXPECT_EQ(image.scale, whole.scale);
      const std::vector<uint8_t> got = RegionPixels(image, pixels, region);
      const std::vector<uint8_t> want = RegionPixels(whole, whole_pixels, region);
      ASSERT_FALSE(want.empty());
      ASSERT_TRUE(got == want) << "pixels differ from the whole decode";
    }
  }
}

TEST(JpegRestartsTest, CropsDecodedFromTheirRowsMatchTheWholeDecode) {
  std::mt19937 rng(11);
  for (const Case& c : Cases()) {
   for (const JpegRestartOptions& interval : Intervals()) {
    SCOPED_TRACE(std::string(c.name) + ", " + Name(interval));
    const std::vector<uint8_t> original =
        EncodeJpeg(TestImage(c.width, c.height, 3), c.width, c.height, c.options);
    std::vector<uint8_t> rewritten;
    std::vector<uint32_t> offsets;
    ASSERT_TRUE(AddJpegRestarts(original, interval, rewritten, offsets));
    ExpectCropsMatchTheWholeDecode(original, rewritten, offsets, c.width, c.height, 12, rng);
   }
  }
}

// A progressive JPEG written as a baseline one holds the same coefficients:
// decoded whole, and cropped through its restart markers, it gives the
// pixels of the progressive file decoded whole.
TEST(JpegRestartsTest, ProgressiveJpegsBecomeBaselineWithTheSamePixels) {
  std::mt19937 rng(13);
  for (Case c : Cases()) {
    c.options.progressive = true;
    for (JpegRestartOptions interval : {JpegRestartOptions{1, 0}, JpegRestartOptions{1, 4}}) {
      SCOPED_TRACE(std::string(c.name) + " progressive, " + Name(interval));
      const std::vector<uint8_t> original =
          EncodeJpeg(TestImage(c.width, c.height, 4), c.width, c.height, c.options);
      ASSERT_TRUE(ReadImageInfo(original, "original").progressive);
      std::vector<uint8_t> rewritten;
      std::vector<uint32_t> offsets;
      bool was_progressive = false;
      EXPECT_FALSE(AddJpegRestarts(original, interval, rewritten, offsets, &was_progressive));
      interval.progressive_to_baseline = true;
      ASSERT_TRUE(AddJpegRestarts(original, interval, rewritten, offsets, &was_progressive));
      EXPECT_TRUE(was_progressive);
      JpegLayout layout;
      ASSERT_TRUE(ParseJpegLayout(rewritten, layout));  // one sequential scan
      EXPECT_FALSE(ReadImageInfo(rewritten, "rewritten").progressive);
      std::vector<uint32_t> found;
      ASSERT_TRUE(FindJpegRestarts(rewritten, found));
      EXPECT_EQ(found, offsets);
      std::vector<uint8_t> a, b;
      DecodeImage(original, "original", a);
      DecodeImage(rewritten, "rewritten", b);
      EXPECT_TRUE(a == b) << "the full decode differs";
      ExpectCropsMatchTheWholeDecode(original, rewritten, offsets, c.width, c.height, 6, rng);
    }
  }
  // A baseline file says it was not progressive.
  const std::vector<uint8_t> baseline = EncodeJpeg(TestImage(64, 48, 1), 64, 48);
  std::vector<uint8_t> out;
  std::vector<uint32_t> offsets;
  bool was_progressive = true;
  ASSERT_TRUE(AddJpegRestarts(baseline, {1, 4, true}, out, offsets, &was_progressive));
  EXPECT_FALSE(was_progressive);
}

// A progressive file whose last scans are missing is a valid JPEG, but
// libjpeg smooths the blocks of its unfinished coefficients when decoding
// it, which a baseline file of the same coefficients would not get: it is
// left alone.
TEST(JpegRestartsTest, AnUnfinishedProgressiveJpegIsLeftAlone) {
  JpegEncodeOptions options;
  options.progressive = true;
  const std::vector<uint8_t> complete = EncodeJpeg(TestImage(96, 80, 2), 96, 80, options);
  // Cut before the last start-of-scan (a refinement scan) and end the file.
  size_t last_sos = 0;
  for (size_t i = 2; i + 1 < complete.size(); ++i) {
    if (complete[i] == 0xFF && complete[i + 1] == 0xDA) last_sos = i;
  }
  ASSERT_GT(last_sos, 0u);
  std::vector<uint8_t> unfinished(complete.begin(), complete.begin() + last_sos);
  unfinished.push_back(0xFF);
  unfinished.push_back(0xD9);
  std::vector<uint8_t> pixels;
  DecodeImage(unfinished, "unfinished", pixels);  // decodes
  std::vector<uint8_t> out;
  std::vector<uint32_t> offsets;
  EXPECT_TRUE(AddJpegRestarts(complete, {1, 4, true}, out, offsets));
  EXPECT_FALSE(AddJpegRestarts(unfinished, {1, 4, true}, out, offsets));
}

// The rows above the crop are not decoded at all: a damaged first row makes
// the whole decode fail, while a crop lower down decodes, with the pixels of
// the undamaged file.
TEST(JpegRestartsTest, RowsAboveTheCropAreNotRead) {
  const int width = 320, height = 240;
  const std::vector<uint8_t> original = EncodeJpeg(TestImage(width, height, 5), width, height);
  std::vector<uint8_t> rewritten;
  std::vector<uint32_t> offsets;
  ASSERT_TRUE(AddJpegRestarts(original, JpegRestartOptions{}, rewritten, offsets));
  std::vector<uint8_t> damaged = rewritten;
  damaged[offsets[0] + 4] = 0xFF;  // a marker in the middle of row 0's data
  damaged[offsets[0] + 5] = 0x01;
  std::vector<uint8_t> pixels;
  EXPECT_THROW(DecodeImage(damaged, "damaged", pixels), SampleError);

  const Rect region{40, 100, 200, 120};
  DecodeRequest request;
  request.region = region;
  request.jpeg_restarts = offsets;
  const DecodedImage image = DecodeImage(damaged, "damaged", pixels, request);
  EXPECT_GT(image.y, 0);
  std::vector<uint8_t> whole_pixels;
  const DecodedImage whole = DecodeImage(original, "original", whole_pixels);
  EXPECT_TRUE(RegionPixels(image, pixels, region) == RegionPixels(whole, whole_pixels, region));
}

// Offsets that do not describe the data are ignored: the usual decode runs.
TEST(JpegRestartsTest, WrongOffsetsFallBackToTheWholeDecode) {
  const int width = 160, height = 160;
  const std::vector<uint8_t> original = EncodeJpeg(TestImage(width, height, 9), width, height);
  std::vector<uint8_t> rewritten;
  std::vector<uint32_t> offsets;
  ASSERT_TRUE(AddJpegRestarts(original, JpegRestartOptions{}, rewritten, offsets));
  std::vector<uint8_t> whole_pixels;
  const DecodedImage whole = DecodeImage(original, "original", whole_pixels);
  const Rect region{0, 90, 160, 60};
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<uint32_t> wrong = offsets;
    if (variant == 0) wrong.pop_back();
    if (variant == 1) wrong[5] += 1;
    if (variant == 2) wrong.back() = static_cast<uint32_t>(rewritten.size() + 100);
    DecodeRequest request;
    request.region = region;
    request.jpeg_restarts = wrong;
    std::vector<uint8_t> pixels;
    const DecodedImage image = DecodeImage(rewritten, "rewritten", pixels, request);
    EXPECT_TRUE(RegionPixels(image, pixels, region) == RegionPixels(whole, whole_pixels, region))
        << "variant " << variant;
  }
  // A file without markers and offsets that claim some: decoded as usual.
  DecodeRequest request;
  request.region = region;
  request.jpeg_restarts = offsets;
  std::vector<uint8_t> pixels;
  const DecodedImage image = DecodeImage(original, "original", pixels, request);
  EXPECT_TRUE(RegionPixels(image, pixels, region) == RegionPixels(whole, whole_pixels, region));
}

// Progressive JPEGs unless asked for, CMYK and damaged ones always.
TEST(JpegRestartsTest, ProgressiveAndCmykAreLeftAlone) {
  const std::vector<uint8_t> rgb = TestImage(64, 64, 1);
  JpegEncodeOptions progressive;
  progressive.progressive = true;
  JpegEncodeOptions cmyk;
  cmyk.cmyk = true;
  std::vector<uint8_t> out;
  std::vector<uint32_t> offsets;
  EXPECT_FALSE(AddJpegRestarts(EncodeJpeg(rgb, 64, 64, progressive), JpegRestartOptions{}, out, offsets));
  JpegLayout layout;  // the decoder's window needs one sequential scan
  EXPECT_FALSE(ParseJpegLayout(EncodeJpeg(rgb, 64, 64, progressive), layout));
  EXPECT_FALSE(AddJpegRestarts(EncodeJpeg(rgb, 64, 64, cmyk), JpegRestartOptions{}, out, offsets));
  EXPECT_FALSE(AddJpegRestarts(EncodeJpeg(rgb, 64, 64, cmyk), {1, 4, true}, out, offsets));
  std::vector<uint8_t> truncated = EncodeJpeg(rgb, 64, 64);
  truncated.resize(truncated.size() / 2);
  EXPECT_FALSE(AddJpegRestarts(truncated, JpegRestartOptions{}, out, offsets));
  EXPECT_FALSE(AddJpegRestarts(std::vector<uint8_t>{0xFF, 0xD8, 0xFF}, JpegRestartOptions{}, out, offsets));
}

}  // namespace
}  // namespace feedline::vision
