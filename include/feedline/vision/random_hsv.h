// YOLO's HSV augmentation (Ultralytics' RandomHSV, hsv_h / hsv_s / hsv_v)
// on uint8 RGB pixels: the image converted to OpenCV's 8-bit HSV (hue in
// [0, 180)), hue multiplied by a factor modulo 180, saturation and value
// multiplied by theirs and clipped to [0, 255], each level truncated as
// their lookup tables truncate it, and converted back.
//
// Thread safety: the functions keep no state.
//
// Example:
//   const Transform hsv = Transform::RandomHSV();
//   ApplyRandomHsv(image, DrawRandomHsv(hsv, ctx.rng()));
#ifndef FEEDLINE_VISION_RANDOM_HSV_H_
#define FEEDLINE_VISION_RANDOM_HSV_H_

#include <array>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/vision/image_ops.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

// The factors of hue, saturation and value; all 1 when the gains are all 0.
struct FEEDLINE_EXPORT RandomHsvParams {
  std::array<double, 3> factors = {1, 1, 1};
};

// Three uniforms from `rng`, one for each of hue, saturation and value,
// each factor 1 + gain * u with u in [-1, 1); none when every gain is 0
// (Ultralytics draws nothing then). REQUIRES: hsv.kind == kRandomHSV.
FEEDLINE_EXPORT RandomHsvParams DrawRandomHsv(const Transform& hsv, Rng& rng);

// Applies the factors to `image` in place; nothing when they are all 1.
FEEDLINE_EXPORT void ApplyRandomHsv(RgbImageView image, const RandomHsvParams& params);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_RANDOM_HSV_H_
