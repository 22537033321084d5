// YOLO's HSV augmentation (Ultralytics' RandomHSV, hsv_h / hsv_s / hsv_v,
// as in 8.3.79 and later) on uint8 RGB pixels: in OpenCV's 8-bit HSV (hue
// in [0, 180)) the hue shifted by (factor - 1) * 180 levels modulo 180,
// saturation and value multiplied by their factors and clipped to
// [0, 255], each level truncated as Ultralytics' lookup tables truncate it,
// and back to RGB.
//
// One pass over the pixels, eight at a time with AVX2 where the CPU has it,
// no HSV image in memory: each pixel's 8-bit H, S and V are computed with
// OpenCV's integer arithmetic, the tables' arithmetic applied, and the
// pixel converted back with the float arithmetic of OpenCV's vectorized
// HSV2RGB, which truncates. So it gives OpenCV's three steps' bytes except
// where OpenCV's scalar loop (the last pixels of the rows it converts)
// rounds instead: there a value can be one level higher in theirs
// (tests/vision/random_hsv_test.cc: at most 1 level, under 1% of values).
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
// Hue's factor f shifts the hue by f - 1 of a turn ((f - 1) * 180 levels).
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
