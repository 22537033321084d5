// The AutoAugment family of torchvision.transforms (autoaugment.py,
// torchvision 0.14): TrivialAugmentWide, RandAugment and AutoAugment, their
// op list, magnitude bins and random draws, with the ops of image_ops.h.
//
// The draws follow torchvision's order and distributions, with the random
// numbers taken from the sample's Rng (so the same sample gets the same ops
// in any worker), not from torch's generator:
//   TrivialAugmentWide  op = randint(14); bin = randint(num_bins) if the op
//                       has magnitudes; negative if signed and randint(2).
//   RandAugment         num_ops times: op = randint(14); negative if
//                       signed and randint(2).
//   AutoAugment         sub-policy = randint(25), two uniforms, two signs;
//                       each op applies when its uniform <= its p.
// Magnitudes are torchvision's torch.linspace values (float32), computed
// here in double and rounded to float32: equal, or one float32 ulp apart.
//
// Thread safety: the functions keep no state.
//
// Example:
//   for (const AugmentChoice& c : DrawTrivialAugmentWide(31, rng))
//     ApplyAugmentOp(image, c.op, c.magnitude, Interpolation::kNearest, {0, 0, 0}, scratch);
#ifndef FEEDLINE_VISION_AUTO_AUGMENT_H_
#define FEEDLINE_VISION_AUTO_AUGMENT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "feedline/export.h"
#include "feedline/rng.h"
#include "feedline/vision/image_ops.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision {

// torchvision's op names, in the order of its augmentation spaces.
enum class AugmentOp : uint8_t {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert,
};

// "ShearX", "Equalize", ... as in torchvision.
FEEDLINE_EXPORT const char* AugmentOpName(AugmentOp op);
FEEDLINE_EXPORT std::optional<AugmentOp> ParseAugmentOp(std::string_view name);

// torchvision's _apply_op(img, op_name, magnitude, interpolation, fill):
// shears about the top-left corner by atan(magnitude), translations by
// int(magnitude) pixels, rotation by magnitude degrees about the centre,
// Brightness / Color / Contrast / Sharpness by the factor 1 + magnitude,
// Posterize to int(magnitude) bits, Solarize above magnitude.
FEEDLINE_EXPORT void ApplyAugmentOp(RgbImageView image, AugmentOp op, double magnitude,
                                    Interpolation interpolation, const std::array<float, 3>& fill,
                                    std::vector<uint8_t>& scratch);

// One entry of an augmentation space: the op, whether a magnitude is
// negated with probability 1/2, and its magnitude bins (empty: none, the
// magnitude is 0).
struct FEEDLINE_EXPORT AugmentSpaceEntry {
  AugmentOp op;
  bool is_signed;
  std::vector<double> magnitudes;
};

// TrivialAugmentWide._augmentation_space(num_bins).
FEEDLINE_EXPORT std::vector<AugmentSpaceEntry> TrivialAugmentWideSpace(int num_bins);
// RandAugment._augmentation_space(num_bins, (height, width)).
FEEDLINE_EXPORT std::vector<AugmentSpaceEntry> RandAugmentSpace(int num_bins, int height,
                                                                int width);
// AutoAugment._augmentation_space(num_bins, (height, width)).
FEEDLINE_EXPORT std::vector<AugmentSpaceEntry> AutoAugmentSpace(int num_bins, int height,
                                                                int width);

// One step of an AutoAugment sub-policy: apply `op` with probability p at
// magnitude bin `bin` (-1: the op takes no magnitude).
struct FEEDLINE_EXPORT PolicyStep {
  AugmentOp op;
  double p;
  int bin;
};
using SubPolicy = std::array<PolicyStep, 2>;
// AutoAugment._get_policies(policy): 25 sub-policies.
FEEDLINE_EXPORT const std::vector<SubPolicy>& AutoAugmentPolicies(AutoAugmentPolicy policy);

// An op to apply, with its signed magnitude.
struct FEEDLINE_EXPORT AugmentChoice {
  AugmentOp op;
  double magnitude;
};

FEEDLINE_EXPORT std::vector<AugmentChoice> DrawTrivialAugmentWide(int num_bins, Rng& rng);
FEEDLINE_EXPORT std::vector<AugmentChoice> DrawRandAugment(int num_ops, int magnitude, int num_bins,
                                                           int height, int width, Rng& rng);
FEEDLINE_EXPORT std::vector<AugmentChoice> DrawAutoAugment(AutoAugmentPolicy policy, int height,
                                                           int width, Rng& rng);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_AUTO_AUGMENT_H_
