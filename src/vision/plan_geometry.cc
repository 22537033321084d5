#include "feedline/vision/plan_geometry.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace feedline::vision {

PlanGeometry::PlanGeometry(const PipelinePlan& plan)
    : plan_(plan), sx_(plan.out_width / plan.width), sy_(plan.out_height / plan.height) {}

std::array<double, 2> PlanGeometry::MapPoint(double x, double y) const {
  double u = (x - plan_.x) * sx_;
  if (plan_.flip) u = plan_.out_width - u;
  return {u, (y - plan_.y) * sy_};
}

std::array<float, 4> PlanGeometry::MapBox(const std::array<float, 4>& box) const {
  const std::array<double, 2> a = MapPoint(box[0], box[1]);
  const std::array<double, 2> b = MapPoint(box[2], box[3]);
  auto clip = [](double v, int limit) { return std::clamp(v, 0.0, static_cast<double>(limit)); };
  const double w = plan_.out_width, h = plan_.out_height;
  return {static_cast<float>(clip(std::min(a[0], b[0]), static_cast<int>(w))),
          static_cast<float>(clip(a[1], static_cast<int>(h))),
          static_cast<float>(clip(std::max(a[0], b[0]), static_cast<int>(w))),
          static_cast<float>(clip(b[1], static_cast<int>(h)))};
}

void PlanGeometry::FillPolygon(std::span<const float> xy, uint8_t* mask) const {
  const size_t n = xy.size() / 2;
  if (n < 3) return;
  const int ow = plan_.out_width, oh = plan_.out_height;
  std::vector<double> px(n), py(n);
  double top = INFINITY, bottom = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    // A polygon with a coordinate that is no number draws nothing.
    if (!std::isfinite(xy[2 * i]) || !std::isfinite(xy[2 * i + 1])) return;
    const std::array<double, 2> p = MapPoint(xy[2 * i], xy[2 * i + 1]);
    px[i] = p[0];
    py[i] = p[1];
    top = std::min(top, p[1]);
    bottom = std::max(bottom, p[1]);
  }
  // Rows whose centre v + 0.5 lies within the polygon's vertical extent.
  const int v0 = static_cast<int>(std::ceil(std::clamp(top, -1.0, oh + 1.0) - 0.5));
  const int v1 = static_cast<int>(std::floor(std::clamp(bottom, -1.0, oh + 1.0) - 0.5));
  std::vector<double> crossings;
  for (int v = std::max(v0, 0); v <= std::min(v1, oh - 1); ++v) {
    const double yc = v + 0.5;
    crossings.clear();
    for (size_t i = 0, j = n - 1; i < n; j = i++) {
      // Half-open in y, so a vertex on the line counts once.
      if ((py[i] <= yc) != (py[j] <= yc)) {
        crossings.push_back(px[j] + (yc - py[j]) * (px[i] - px[j]) / (py[i] - py[j]));
      }
    }
    std::sort(crossings.begin(), crossings.end());
    uint8_t* row = mask + static_cast<size_t>(v) * ow;
    for (size_t k = 0; k + 1 < crossings.size(); k += 2) {
      // Pixels whose centre u + 0.5 lies in [left, right), the edges
      // clamped first so that a far vertex converts to int safely.
      const double left = std::clamp(crossings[k], -1.0, ow + 1.0);
      const double right = std::clamp(crossings[k + 1], -1.0, ow + 1.0);
      const int u0 = std::max(0, static_cast<int>(std::ceil(left - 0.5)));
      const int u1 = std::min(ow, static_cast<int>(std::ceil(right - 0.5)));
      if (u1 > u0) std::fill(row + u0, row + u1, uint8_t{1});
    }
  }
}

void PlanGeometry::FillRle(const CocoRle& rle, uint8_t* mask) const {
  const int ow = plan_.out_width, oh = plan_.out_height;
  if (rle.height <= 0 || rle.width <= 0) return;
  // The mask, decoded once (column-major, as COCO stores it).
  std::vector<uint8_t> source(static_cast<size_t>(rle.height) * rle.width);
  size_t at = 0;
  uint8_t value = 0;
  for (uint32_t run : rle.counts) {
    const size_t end = std::min(source.size(), at + run);
    if (value) std::fill(source.begin() + static_cast<ptrdiff_t>(at), source.begin() + static_cast<ptrdiff_t>(end), uint8_t{1});
    at = end;
    value ^= 1;
  }
  // Each output pixel's centre, back in source pixels.
  std::vector<int> column(static_cast<size_t>(ow));
  for (int u = 0; u < ow; ++u) {
    const double uc = plan_.flip ? ow - (u + 0.5) : u + 0.5;
    column[static_cast<size_t>(u)] = static_cast<int>(std::floor(plan_.x + uc / sx_));
  }
  for (int v = 0; v < oh; ++v) {
    const int y = static_cast<int>(std::floor(plan_.y + (v + 0.5) / sy_));
    if (y < 0 || y >= rle.height) continue;
    uint8_t* row = mask + static_cast<size_t>(v) * ow;
    for (int u = 0; u < ow; ++u) {
      const int x = column[static_cast<size_t>(u)];
      if (x >= 0 && x < rle.width && source[static_cast<size_t>(x) * rle.height + y]) row[u] = 1;
    }
  }
}

}  // namespace feedline::vision
