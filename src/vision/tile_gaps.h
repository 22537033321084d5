#ifndef FEEDLINE_SRC_VISION_TILE_GAPS_H_
#define FEEDLINE_SRC_VISION_TILE_GAPS_H_

#include <algorithm>
#include <array>
#include <span>
#include <utility>

namespace feedline::vision::internal {

// An image's rectangle [x0, x1) x [y0, y1) that a tile covers.
struct TileRect {
  int x0 = 0;
  int y0 = 0;
  int x1 = 0;
  int y1 = 0;
};

// Calls gap(y, x0, x1) for each run [x0, x1) of row y of a width x height
// image that no rectangle of `rects` covers, rows in order, runs left to
// right. A composite fills only those runs before drawing its tiles, so
// that no pixel is written twice (a mosaic's tiles cover about 90% of it).
// Empty rectangles are passed over. REQUIRES: at most 4 rectangles.
template <typename Gap>
void ForEachGap(std::span<const TileRect> rects, int width, int height, Gap&& gap) {
  std::array<std::pair<int, int>, 4> spans;
  for (int y = 0; y < height; ++y) {
    size_t n = 0;
    for (const TileRect& r : rects) {
      if (r.x1 <= r.x0 || y < r.y0 || y >= r.y1) continue;
      spans[n++] = {r.x0, r.x1};
    }
    // At most 4 spans: by their left edge, in place.
    for (size_t i = 1; i < n; ++i) {
      for (size_t j = i; j > 0 && spans[j].first < spans[j - 1].first; --j) {
        std::swap(spans[j], spans[j - 1]);
      }
    }
    int x = 0;
    for (size_t i = 0; i <= n; ++i) {
      const int end = i < n ? std::min(spans[i].first, width) : width;
      if (end > x) gap(y, x, end);
      if (i < n) x = std::max(x, spans[i].second);
    }
  }
}

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_TILE_GAPS_H_
