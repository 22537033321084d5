#include "feedline/vision/plan_geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
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

namespace {

// COCO's polygon rule works on a grid 5 times finer than the pixels.
constexpr int kFine = 5;
// The most points traced along a polygon's outline: beyond it (vertices far
// outside the image, which pycocotools itself cannot draw: it holds every
// point) the polygon is first clipped to the image and one pixel around it.
constexpr int64_t kMostTracedPoints = int64_t{1} << 25;

// C's conversion of a double to int (toward zero), which the rule's
// rounding (v + 0.5) relies on; far values saturate instead of being
// undefined.
int TowardZero(double v) { return static_cast<int>(std::clamp(v, -2e9, 2e9)); }

// The polygon (x, y pairs in output pixels) clipped to [lo, hi] x [lo_y,
// hi_y] (Sutherland-Hodgman, one side at a time).
std::vector<double> ClipPolygon(std::vector<double> xy, double lo_x, double hi_x, double lo_y,
                                double hi_y) {
  auto clip_side = [](const std::vector<double>& in, int axis, double bound, bool keep_above) {
    std::vector<double> out;
    const size_t n = in.size() / 2;
    auto inside = [&](size_t i) {
      return keep_above ? in[2 * i + axis] >= bound : in[2 * i + axis] <= bound;
    };
    for (size_t i = 0; i < n; ++i) {
      const size_t j = (i + 1) % n;
      const bool in_i = inside(i), in_j = inside(j);
      if (in_i) out.insert(out.end(), {in[2 * i], in[2 * i + 1]});
      if (in_i != in_j) {
        const double f = (bound - in[2 * i + axis]) / (in[2 * j + axis] - in[2 * i + axis]);
        const double x = in[2 * i] + f * (in[2 * j] - in[2 * i]);
        const double y = in[2 * i + 1] + f * (in[2 * j + 1] - in[2 * i + 1]);
        out.insert(out.end(), {axis == 0 ? bound : x, axis == 1 ? bound : y});
      }
    }
    return out;
  };
  xy = clip_side(xy, 0, lo_x, true);
  xy = clip_side(xy, 0, hi_x, false);
  xy = clip_side(xy, 1, lo_y, true);
  xy = clip_side(xy, 1, hi_y, false);
  return xy;
}

// Calls `point(u, v)` for each point of the fine grid along the closed
// polygon (fx, fy), edge by edge from each vertex to the next, one point per
// step of the edge's longer axis, the other coordinate rounded.
template <typename Point>
void TraceOutline(const std::vector<int>& fx, const std::vector<int>& fy, Point&& point) {
  const size_t n = fx.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t j = i + 1 == n ? 0 : i + 1;
    const int64_t dx = std::abs(int64_t{fx[j]} - fx[i]), dy = std::abs(int64_t{fy[j]} - fy[i]);
    if (dx == 0 && dy == 0) {
      // A repeated vertex: one point, beside points of the same column.
      point(fx[i], fy[i]);
      continue;
    }
    const bool along_x = dx >= dy;
    const int64_t steps = along_x ? dx : dy;
    // The edge is walked from its lower end along the axis it steps on, so
    // the rounding is the same whichever way the polygon goes round; the
    // points come in the polygon's order.
    const bool reversed = along_x ? fx[i] > fx[j] : fy[i] > fy[j];
    const int x0 = reversed ? fx[j] : fx[i], y0 = reversed ? fy[j] : fy[i];
    const int x1 = reversed ? fx[i] : fx[j], y1 = reversed ? fy[i] : fy[j];
    const double slope = along_x ? static_cast<double>(y1 - y0) / static_cast<double>(dx)
                                 : static_cast<double>(x1 - x0) / static_cast<double>(dy);
    for (int64_t d = 0; d <= steps; ++d) {
      const int64_t t = reversed ? steps - d : d;
      if (along_x) {
        point(static_cast<int>(x0 + t), TowardZero(y0 + slope * static_cast<double>(t) + 0.5));
      } else {
        point(TowardZero(x0 + slope * static_cast<double>(t) + 0.5), static_cast<int>(y0 + t));
      }
    }
  }
}

}  // namespace

void PlanGeometry::FillPolygon(std::span<const double> xy, uint8_t* mask) const {
  const size_t n = xy.size() / 2;
  if (n < 3) return;
  const int ow = plan_.out_width, oh = plan_.out_height;
  // The vertices in output pixels, unmirrored (a mirror flips the drawn
  // mask, as it flips the pixels).
  std::vector<double> out(2 * n);
  for (size_t i = 0; i < n; ++i) {
    // A polygon with a coordinate that is no number draws nothing.
    if (!std::isfinite(xy[2 * i]) || !std::isfinite(xy[2 * i + 1])) return;
    out[2 * i] = (xy[2 * i] - plan_.x) * sx_;
    out[2 * i + 1] = (xy[2 * i + 1] - plan_.y) * sy_;
  }
  auto to_fine = [](const std::vector<double>& points, std::vector<int>* fx, std::vector<int>* fy) {
    const size_t count = points.size() / 2;
    fx->resize(count);
    fy->resize(count);
    int64_t traced = 0;
    for (size_t i = 0; i < count; ++i) {
      (*fx)[i] = TowardZero(kFine * points[2 * i] + 0.5);
      (*fy)[i] = TowardZero(kFine * points[2 * i + 1] + 0.5);
    }
    for (size_t i = 0; i < count; ++i) {
      const size_t j = (i + 1) % count;
      traced += std::max(std::abs(int64_t{(*fx)[j]} - (*fx)[i]),
                         std::abs(int64_t{(*fy)[j]} - (*fy)[i])) + 1;
    }
    return traced;
  };
  std::vector<int> fx, fy;
  if (to_fine(out, &fx, &fy) > kMostTracedPoints) {
    out = ClipPolygon(std::move(out), -1, ow + 1, -1, oh + 1);
    if (out.size() < 6) return;
    to_fine(out, &fx, &fy);
  }
  // Where the outline crosses a pixel column's centre (fine x = kFine * x +
  // 2) from one point to the next, the row below the crossing, as a
  // column-major position x * oh + y: each such position toggles the mask,
  // in column-major order.
  std::vector<int64_t> toggles;
  bool first = true;
  int pu = 0, pv = 0;
  TraceOutline(fx, fy, [&](int u, int v) {
    const bool moved = !first && u != pu;
    const int crossed = u < pu ? u : u - 1;
    const int below = std::min(v, pv);
    first = false;
    pu = u;
    pv = v;
    if (!moved || crossed < 2 || (crossed - 2) % kFine != 0) return;
    const int x = (crossed - 2) / kFine;
    if (x > ow - 1) return;
    const double row = (below + 0.5) / kFine - 0.5;
    const int y = static_cast<int>(std::ceil(std::clamp(row, 0.0, static_cast<double>(oh))));
    toggles.push_back(static_cast<int64_t>(x) * oh + y);
  });
  std::sort(toggles.begin(), toggles.end());
  // Inside between each pair of toggles (two at one position cancel).
  const int64_t end = static_cast<int64_t>(ow) * oh;
  for (size_t k = 0; k < toggles.size(); k += 2) {
    const int64_t first = toggles[k];
    const int64_t last = k + 1 < toggles.size() ? std::min(toggles[k + 1], end) : end;
    // Down each column of the run (column-major), one division per run.
    int64_t x = first / oh, y = first % oh;
    for (int64_t p = first; p < last; ++p) {
      mask[y * ow + (plan_.flip ? ow - 1 - x : x)] = 1;
      if (++y == oh) {
        y = 0;
        ++x;
      }
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
