// torchvision's references/detection RandomPhotometricDistort on uint8 RGB
// pixels: brightness, contrast (before or after saturation and hue),
// saturation, hue, each with probability p, then with probability p a
// random permutation of the channels. The adjustments are ColorJitter's
// (image_ops.h: torchvision's arithmetic on uint8 tensors; on a PIL image
// the references' own results differ from it by a level here and there,
// as ColorJitter's do).
//
// Thread safety: the functions keep no state.
//
// Example:
//   const Transform distort = Transform::RandomPhotometricDistort();
//   ApplyPhotometricDistort(image, DrawPhotometricDistort(distort, ctx.rng()));
#ifndef FEEDLINE_VISION_PHOTOMETRIC_DISTORT_H_
#define FEEDLINE_VISION_PHOTOMETRIC_DISTORT_H_

#include <array>
#include <optional>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/vision/image_ops.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

// What one call does: each adjustment that is drawn has its factor, and
// `channels` is the order the output's channels come from ({0, 1, 2}: as
// they are).
struct FEEDLINE_EXPORT PhotometricDistortParams {
  std::optional<double> brightness, contrast, saturation, hue;
  bool contrast_first = true;
  std::array<int, 3> channels = {0, 1, 2};
};

// The references' draws, from `rng`: seven uniforms (brightness, the
// contrast coin, contrast before, saturation, hue, contrast after, the
// permutation), then for each adjustment that is on its factor, in the
// order above, then the permutation as torch.randperm(3) (Fisher-Yates).
// REQUIRES: distort.kind == kRandomPhotometricDistort.
FEEDLINE_EXPORT PhotometricDistortParams DrawPhotometricDistort(const Transform& distort,
                                                                Rng& rng);

// RandomPhotometricDistort.forward with the drawn parameters.
FEEDLINE_EXPORT void ApplyPhotometricDistort(RgbImageView image,
                                             const PhotometricDistortParams& params);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_PHOTOMETRIC_DISTORT_H_
