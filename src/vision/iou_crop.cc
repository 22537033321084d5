#include "feedline/vision/iou_crop.h"

#include <algorithm>
#include <cstdint>

namespace feedline::vision {
namespace {

// torchvision.ops.box_iou of two boxes.
double Iou(const std::array<double, 4>& a, const std::array<double, 4>& b) {
  const double inter_w = std::max(std::min(a[2], b[2]) - std::max(a[0], b[0]), 0.0);
  const double inter_h = std::max(std::min(a[3], b[3]) - std::max(a[1], b[1]), 0.0);
  const double inter = inter_w * inter_h;
  const double area_a = (a[2] - a[0]) * (a[3] - a[1]);
  const double area_b = (b[2] - b[0]) * (b[3] - b[1]);
  return inter / (area_a + area_b - inter);
}

// Option draws before an image is left as it is: torchvision's loop draws
// until it succeeds, which, with no option of 1 or more, may be never.
constexpr int kMaxOptionDraws = 1000;

}  // namespace

bool CentredIn(const std::array<double, 4>& box, const CropBox& crop) {
  const double cx = 0.5 * (box[0] + box[2]), cy = 0.5 * (box[1] + box[3]);
  return crop.left < cx && cx < crop.left + crop.width && crop.top < cy &&
         cy < crop.top + crop.height;
}

std::optional<CropBox> RandomIoUCropBox(int height, int width,
                                        std::span<const std::array<double, 4>> boxes,
                                        const Transform& t, Rng& rng) {
  if (boxes.empty()) return std::nullopt;
  for (int draw = 0; draw < kMaxOptionDraws; ++draw) {
    const double min_iou =
        t.iou_options[rng.UniformInt(static_cast<uint64_t>(t.iou_options.size()))];
    if (min_iou >= 1.0) return std::nullopt;
    for (int trial = 0; trial < t.trials; ++trial) {
      const double rw = rng.Uniform(t.scale[0], t.scale[1]);
      const double rh = rng.Uniform(t.scale[0], t.scale[1]);
      const int new_w = static_cast<int>(width * rw);
      const int new_h = static_cast<int>(height * rh);
      if (new_w <= 0 || new_h <= 0) continue;
      const double aspect = static_cast<double>(new_w) / new_h;
      if (!(t.ratio[0] <= aspect && aspect <= t.ratio[1])) continue;
      const int left = static_cast<int>((width - new_w) * rng.Uniform());
      const int top = static_cast<int>((height - new_h) * rng.Uniform());
      const CropBox candidate{top, left, new_h, new_w};
      const std::array<double, 4> crop = {double(left), double(top), double(left + new_w),
                                          double(top + new_h)};
      bool any_inside = false;
      double best = -1;
      for (const std::array<double, 4>& b : boxes) {
        if (!CentredIn(b, candidate)) continue;
        any_inside = true;
        best = std::max(best, Iou(b, crop));
      }
      if (!any_inside || best < min_iou) continue;
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace feedline::vision
