// A straightforward double-precision statement of the three resampling
// filters, the reference the resampling tests compare against.
#ifndef FEEDLINE_TESTS_VISION_RESAMPLE_REFERENCE_H_
#define FEEDLINE_TESTS_VISION_RESAMPLE_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/vision/resample.h"

namespace feedline::vision::internal {

// Straightforward floating-point references of the three filters, over the
// box (x, y, w, h) of a w0 x h0 RGB image.
inline std::vector<uint8_t> ResampleReference(const std::vector<uint8_t>& src, int w0, int h0, double x, double y,
                               double w, double h, int ow, int oh, Filter filter) {
  std::vector<uint8_t> out(static_cast<size_t>(ow) * oh * 3);
  const double sx = w / ow, sy = h / oh;
  const int px0 = static_cast<int>(std::floor(x + 1e-6));
  const int px1 = std::min(w0, static_cast<int>(std::ceil(x + w - 1e-6))) - 1;
  const int py0 = static_cast<int>(std::floor(y + 1e-6));
  const int py1 = std::min(h0, static_cast<int>(std::ceil(y + h - 1e-6))) - 1;
  auto at = [&](int xx, int yy, int c) {
    xx = std::clamp(xx, px0, px1);
    yy = std::clamp(yy, py0, py1);
    return static_cast<double>(src[(static_cast<size_t>(yy) * w0 + xx) * 3 + c]);
  };
  for (int oy = 0; oy < oh; ++oy) {
    for (int ox = 0; ox < ow; ++ox) {
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        if (filter == Filter::kNearest) {
          v = at(static_cast<int>(std::floor(x + (ox + 0.5) * sx)),
                 static_cast<int>(std::floor(y + (oy + 0.5) * sy)), c);
        } else if (filter == Filter::kLinear) {
          const double cx = x + (ox + 0.5) * sx - 0.5, cy = y + (oy + 0.5) * sy - 0.5;
          const int ix = static_cast<int>(std::floor(cx)), iy = static_cast<int>(std::floor(cy));
          const double ax = cx - ix, ay = cy - iy;
          v = (1 - ay) * ((1 - ax) * at(ix, iy, c) + ax * at(ix + 1, iy, c)) +
              ay * ((1 - ax) * at(ix, iy + 1, c) + ax * at(ix + 1, iy + 1, c));
        } else {  // area: integrate the box of the output pixel
          const double x0 = x + ox * sx, x1 = x0 + sx, y0 = y + oy * sy, y1 = y0 + sy;
          for (int yy = static_cast<int>(std::floor(y0)); yy < y1 - 1e-9; ++yy) {
            const double fy = std::min(y1, yy + 1.0) - std::max(y0, double(yy));
            for (int xx = static_cast<int>(std::floor(x0)); xx < x1 - 1e-9; ++xx) {
              const double fx = std::min(x1, xx + 1.0) - std::max(x0, double(xx));
              v += fx * fy * at(xx, yy, c);
            }
          }
          v /= sx * sy;
        }
        out[(static_cast<size_t>(oy) * ow + ox) * 3 + c] =
            static_cast<uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
      }
    }
  }
  return out;
}

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_TESTS_VISION_RESAMPLE_REFERENCE_H_
