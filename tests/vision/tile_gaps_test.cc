#include "src/vision/tile_gaps.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace feedline::vision::internal {
namespace {

// How many times each pixel of a width x height image is reported as a gap.
std::vector<int> GapCounts(const std::vector<TileRect>& rects, int width, int height) {
  std::vector<int> counts(static_cast<size_t>(width) * height, 0);
  int last_y = -1, last_x1 = -1;
  ForEachGap(rects, width, height, [&](int y, int x0, int x1) {
    EXPECT_LT(x0, x1);
    EXPECT_GE(x0, 0);
    EXPECT_LE(x1, width);
    // Rows in order, runs left to right, never touching (else one run).
    if (y == last_y) {
      EXPECT_GT(x0, last_x1);
    }
    EXPECT_GE(y, last_y);
    last_y = y;
    last_x1 = x1;
    for (int x = x0; x < x1; ++x) ++counts[static_cast<size_t>(y) * width + x];
  });
  return counts;
}

bool Covered(const std::vector<TileRect>& rects, int x, int y) {
  for (const TileRect& r : rects) {
    if (x >= r.x0 && x < r.x1 && y >= r.y0 && y < r.y1) return true;
  }
  return false;
}

TEST(ForEachGap, WithoutTilesTheWholeImageIsOneRunARow) {
  std::vector<std::pair<int, int>> runs;
  ForEachGap({}, 5, 3, [&](int y, int x0, int x1) {
    EXPECT_EQ(x0, 0);
    EXPECT_EQ(x1, 5);
    runs.emplace_back(y, x1 - x0);
  });
  EXPECT_EQ(runs.size(), 3);
}

TEST(ForEachGap, ReportsEachUncoveredPixelOnceAndNoCoveredOne) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const int width = 1 + static_cast<int>(rng() % 40), height = 1 + static_cast<int>(rng() % 40);
    std::vector<TileRect> rects(rng() % 5);
    for (TileRect& r : rects) {
      // Any rectangle: empty, overlapping others, or reaching past the image.
      r.x0 = static_cast<int>(rng() % (width + 4)) - 2;
      r.y0 = static_cast<int>(rng() % (height + 4)) - 2;
      r.x1 = r.x0 + static_cast<int>(rng() % (width + 2));
      r.y1 = r.y0 + static_cast<int>(rng() % (height + 2));
    }
    const std::vector<int> counts = GapCounts(rects, width, height);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        ASSERT_EQ(counts[static_cast<size_t>(y) * width + x], Covered(rects, x, y) ? 0 : 1)
            << "trial " << trial << " at (" << x << ", " << y << ")";
      }
    }
  }
}

TEST(ForEachGap, FourTilesMeetingAtAPointLeaveOnlyTheBorder) {
  // A mosaic's layout: four tiles around (6, 4) of a 10 x 8 image, one
  // pixel of border left on every side.
  const std::vector<TileRect> rects = {{1, 1, 6, 4}, {6, 1, 9, 4}, {1, 4, 6, 7}, {6, 4, 9, 7}};
  const std::vector<int> counts = GapCounts(rects, 10, 8);
  int gaps = 0;
  for (int c : counts) gaps += c;
  EXPECT_EQ(gaps, 10 * 8 - 8 * 6);
}

}  // namespace
}  // namespace feedline::vision::internal
