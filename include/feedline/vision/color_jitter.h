// torchvision.transforms.ColorJitter on uint8 RGB pixels: a random order of
// brightness, contrast, saturation and hue adjustments (image_ops.h), each
// with a factor drawn uniformly from its range.
//
// Thread safety: the functions keep no state.
//
// Example:
//   const Transform jitter = Transform::ColorJitter({0.6, 1.4}, {0.6, 1.4}, {0.6, 1.4});
//   ApplyColorJitter(image, DrawColorJitter(jitter, ctx.rng()));
#ifndef FEEDLINE_VISION_COLOR_JITTER_H_
#define FEEDLINE_VISION_COLOR_JITTER_H_

#include <array>
#include <optional>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/vision/image_ops.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

// What one ColorJitter call does: the adjustments in `order` (0 brightness,
// 1 contrast, 2 saturation, 3 hue), each one left out when its factor is
// empty.
struct FEEDLINE_EXPORT ColorJitterParams {
  std::array<int, 4> order = {0, 1, 2, 3};
  std::optional<double> brightness, contrast, saturation, hue;
};

// ColorJitter.get_params with the random numbers from `rng`: the order as
// torch.randperm(4) (Fisher-Yates: for i in 0..2 swap i with i +
// randint(4 - i)), then a uniform factor for each adjustment that is on, in
// the order brightness, contrast, saturation, hue. REQUIRES: jitter.kind ==
// kColorJitter.
FEEDLINE_EXPORT ColorJitterParams DrawColorJitter(const Transform& jitter, Rng& rng);

// ColorJitter.forward with the drawn parameters.
FEEDLINE_EXPORT void ApplyColorJitter(RgbImageView image, const ColorJitterParams& params);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_COLOR_JITTER_H_
