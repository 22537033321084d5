// The AutoAugment family: torchvision's augmentation spaces, policies and
// draws (autoaugment.py, 0.14), applied with the ops of image_ops.h.
#include "feedline/vision/auto_augment.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace feedline::vision {
namespace {

// torch.linspace(start, end, n) as float32 values.
std::vector<double> Linspace(double start, double end, int n) {
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) {
    const double v = n == 1 ? start : start + (end - start) * i / (n - 1);
    out[i] = static_cast<float>(v);
  }
  return out;
}

// 8 - (torch.arange(n) / ((n - 1) / levels)).round().int(): float32
// division, rounding half to even.
std::vector<double> PosterizeBits(int n, double levels) {
  std::vector<double> out(n);
  const float divisor = static_cast<float>((n - 1) / levels);
  for (int i = 0; i < n; ++i) {
    const float q = static_cast<float>(i) / divisor;
    out[i] = 8 - static_cast<int>(std::nearbyint(q));
  }
  return out;
}

std::vector<AugmentSpaceEntry> CommonSpace(int n, double shear, double translate_x,
                                           double translate_y, double rotate, double enhance,
                                           double posterize_levels) {
  using Op = AugmentOp;
  return {
      {Op::kShearX, true, Linspace(0.0, shear, n)},
      {Op::kShearY, true, Linspace(0.0, shear, n)},
      {Op::kTranslateX, true, Linspace(0.0, translate_x, n)},
      {Op::kTranslateY, true, Linspace(0.0, translate_y, n)},
      {Op::kRotate, true, Linspace(0.0, rotate, n)},
      {Op::kBrightness, true, Linspace(0.0, enhance, n)},
      {Op::kColor, true, Linspace(0.0, enhance, n)},
      {Op::kContrast, true, Linspace(0.0, enhance, n)},
      {Op::kSharpness, true, Linspace(0.0, enhance, n)},
      {Op::kPosterize, false, PosterizeBits(n, posterize_levels)},
      {Op::kSolarize, false, Linspace(255.0, 0.0, n)},
      {Op::kAutoContrast, false, {}},
      {Op::kEqualize, false, {}},
  };
}

// A draw from `entry` at magnitude bin `bin` (ignored without magnitudes),
// negated when `negative` and the op is signed.
AugmentChoice Choose(const AugmentSpaceEntry& entry, int bin, bool negative) {
  double magnitude = entry.magnitudes.empty() ? 0.0 : entry.magnitudes[bin];
  if (entry.is_signed && negative) magnitude = -magnitude;
  return {entry.op, magnitude};
}

bool RandBit(Rng& rng) { return rng.UniformInt(2) == 1; }

// Generated from torchvision 0.14's AutoAugment._get_policies.
const std::vector<SubPolicy> kImageNetPolicy = {
    SubPolicy{{{AugmentOp::kPosterize, 0.4, 8}, {AugmentOp::kRotate, 0.6, 9}}},
    SubPolicy{{{AugmentOp::kSolarize, 0.6, 5}, {AugmentOp::kAutoContrast, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.8, -1}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kPosterize, 0.6, 7}, {AugmentOp::kPosterize, 0.6, 6}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.4, -1}, {AugmentOp::kSolarize, 0.2, 4}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.4, -1}, {AugmentOp::kRotate, 0.8, 8}}},
    SubPolicy{{{AugmentOp::kSolarize, 0.6, 3}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kPosterize, 0.8, 5}, {AugmentOp::kEqualize, 1.0, -1}}},
    SubPolicy{{{AugmentOp::kRotate, 0.2, 3}, {AugmentOp::kSolarize, 0.6, 8}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kPosterize, 0.4, 6}}},
    SubPolicy{{{AugmentOp::kRotate, 0.8, 8}, {AugmentOp::kColor, 0.4, 0}}},
    SubPolicy{{{AugmentOp::kRotate, 0.4, 9}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.0, -1}, {AugmentOp::kEqualize, 0.8, -1}}},
    SubPolicy{{{AugmentOp::kInvert, 0.6, -1}, {AugmentOp::kEqualize, 1.0, -1}}},
    SubPolicy{{{AugmentOp::kColor, 0.6, 4}, {AugmentOp::kContrast, 1.0, 8}}},
    SubPolicy{{{AugmentOp::kRotate, 0.8, 8}, {AugmentOp::kColor, 1.0, 2}}},
    SubPolicy{{{AugmentOp::kColor, 0.8, 8}, {AugmentOp::kSolarize, 0.8, 7}}},
    SubPolicy{{{AugmentOp::kSharpness, 0.4, 7}, {AugmentOp::kInvert, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kShearX, 0.6, 5}, {AugmentOp::kEqualize, 1.0, -1}}},
    SubPolicy{{{AugmentOp::kColor, 0.4, 0}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.4, -1}, {AugmentOp::kSolarize, 0.2, 4}}},
    SubPolicy{{{AugmentOp::kSolarize, 0.6, 5}, {AugmentOp::kAutoContrast, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kInvert, 0.6, -1}, {AugmentOp::kEqualize, 1.0, -1}}},
    SubPolicy{{{AugmentOp::kColor, 0.6, 4}, {AugmentOp::kContrast, 1.0, 8}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.8, -1}, {AugmentOp::kEqualize, 0.6, -1}}},
};
const std::vector<SubPolicy> kCifar10Policy = {
    SubPolicy{{{AugmentOp::kInvert, 0.1, -1}, {AugmentOp::kContrast, 0.2, 6}}},
    SubPolicy{{{AugmentOp::kRotate, 0.7, 2}, {AugmentOp::kTranslateX, 0.3, 9}}},
    SubPolicy{{{AugmentOp::kSharpness, 0.8, 1}, {AugmentOp::kSharpness, 0.9, 3}}},
    SubPolicy{{{AugmentOp::kShearY, 0.5, 8}, {AugmentOp::kTranslateY, 0.7, 9}}},
    SubPolicy{{{AugmentOp::kAutoContrast, 0.5, -1}, {AugmentOp::kEqualize, 0.9, -1}}},
    SubPolicy{{{AugmentOp::kShearY, 0.2, 7}, {AugmentOp::kPosterize, 0.3, 7}}},
    SubPolicy{{{AugmentOp::kColor, 0.4, 3}, {AugmentOp::kBrightness, 0.6, 7}}},
    SubPolicy{{{AugmentOp::kSharpness, 0.3, 9}, {AugmentOp::kBrightness, 0.7, 9}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kEqualize, 0.5, -1}}},
    SubPolicy{{{AugmentOp::kContrast, 0.6, 7}, {AugmentOp::kSharpness, 0.6, 5}}},
    SubPolicy{{{AugmentOp::kColor, 0.7, 7}, {AugmentOp::kTranslateX, 0.5, 8}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.3, -1}, {AugmentOp::kAutoContrast, 0.4, -1}}},
    SubPolicy{{{AugmentOp::kTranslateY, 0.4, 3}, {AugmentOp::kSharpness, 0.2, 6}}},
    SubPolicy{{{AugmentOp::kBrightness, 0.9, 6}, {AugmentOp::kColor, 0.2, 8}}},
    SubPolicy{{{AugmentOp::kSolarize, 0.5, 2}, {AugmentOp::kInvert, 0.0, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.2, -1}, {AugmentOp::kAutoContrast, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.2, -1}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kColor, 0.9, 9}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kAutoContrast, 0.8, -1}, {AugmentOp::kSolarize, 0.2, 8}}},
    SubPolicy{{{AugmentOp::kBrightness, 0.1, 3}, {AugmentOp::kColor, 0.7, 0}}},
    SubPolicy{{{AugmentOp::kSolarize, 0.4, 5}, {AugmentOp::kAutoContrast, 0.9, -1}}},
    SubPolicy{{{AugmentOp::kTranslateY, 0.9, 9}, {AugmentOp::kTranslateY, 0.7, 9}}},
    SubPolicy{{{AugmentOp::kAutoContrast, 0.9, -1}, {AugmentOp::kSolarize, 0.8, 3}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.8, -1}, {AugmentOp::kInvert, 0.1, -1}}},
    SubPolicy{{{AugmentOp::kTranslateY, 0.7, 9}, {AugmentOp::kAutoContrast, 0.9, -1}}},
};
const std::vector<SubPolicy> kSvhnPolicy = {
    SubPolicy{{{AugmentOp::kShearX, 0.9, 4}, {AugmentOp::kInvert, 0.2, -1}}},
    SubPolicy{{{AugmentOp::kShearY, 0.9, 8}, {AugmentOp::kInvert, 0.7, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kSolarize, 0.6, 6}}},
    SubPolicy{{{AugmentOp::kInvert, 0.9, -1}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kRotate, 0.9, 3}}},
    SubPolicy{{{AugmentOp::kShearX, 0.9, 4}, {AugmentOp::kAutoContrast, 0.8, -1}}},
    SubPolicy{{{AugmentOp::kShearY, 0.9, 8}, {AugmentOp::kInvert, 0.4, -1}}},
    SubPolicy{{{AugmentOp::kShearY, 0.9, 5}, {AugmentOp::kSolarize, 0.2, 6}}},
    SubPolicy{{{AugmentOp::kInvert, 0.9, -1}, {AugmentOp::kAutoContrast, 0.8, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kRotate, 0.9, 3}}},
    SubPolicy{{{AugmentOp::kShearX, 0.9, 4}, {AugmentOp::kSolarize, 0.3, 3}}},
    SubPolicy{{{AugmentOp::kShearY, 0.8, 8}, {AugmentOp::kInvert, 0.7, -1}}},
    SubPolicy{{{AugmentOp::kEqualize, 0.9, -1}, {AugmentOp::kTranslateY, 0.6, 6}}},
    SubPolicy{{{AugmentOp::kInvert, 0.9, -1}, {AugmentOp::kEqualize, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kContrast, 0.3, 3}, {AugmentOp::kRotate, 0.8, 4}}},
    SubPolicy{{{AugmentOp::kInvert, 0.8, -1}, {AugmentOp::kTranslateY, 0.0, 2}}},
    SubPolicy{{{AugmentOp::kShearY, 0.7, 6}, {AugmentOp::kSolarize, 0.4, 8}}},
    SubPolicy{{{AugmentOp::kInvert, 0.6, -1}, {AugmentOp::kRotate, 0.8, 4}}},
    SubPolicy{{{AugmentOp::kShearY, 0.3, 7}, {AugmentOp::kTranslateX, 0.9, 3}}},
    SubPolicy{{{AugmentOp::kShearX, 0.1, 6}, {AugmentOp::kInvert, 0.6, -1}}},
    SubPolicy{{{AugmentOp::kSolarize, 0.7, 2}, {AugmentOp::kTranslateY, 0.6, 7}}},
    SubPolicy{{{AugmentOp::kShearY, 0.8, 4}, {AugmentOp::kInvert, 0.8, -1}}},
    SubPolicy{{{AugmentOp::kShearX, 0.7, 9}, {AugmentOp::kTranslateY, 0.8, 3}}},
    SubPolicy{{{AugmentOp::kShearY, 0.8, 5}, {AugmentOp::kAutoContrast, 0.7, -1}}},
    SubPolicy{{{AugmentOp::kShearX, 0.7, 2}, {AugmentOp::kInvert, 0.1, -1}}},
};

}  // namespace

const char* AugmentOpName(AugmentOp op) {
  switch (op) {
    case AugmentOp::kIdentity: return "Identity";
    case AugmentOp::kShearX: return "ShearX";
    case AugmentOp::kShearY: return "ShearY";
    case AugmentOp::kTranslateX: return "TranslateX";
    case AugmentOp::kTranslateY: return "TranslateY";
    case AugmentOp::kRotate: return "Rotate";
    case AugmentOp::kBrightness: return "Brightness";
    case AugmentOp::kColor: return "Color";
    case AugmentOp::kContrast: return "Contrast";
    case AugmentOp::kSharpness: return "Sharpness";
    case AugmentOp::kPosterize: return "Posterize";
    case AugmentOp::kSolarize: return "Solarize";
    case AugmentOp::kAutoContrast: return "AutoContrast";
    case AugmentOp::kEqualize: return "Equalize";
    case AugmentOp::kInvert: return "Invert";
  }
  return "?";
}

std::optional<AugmentOp> ParseAugmentOp(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(AugmentOp::kInvert); ++i) {
    const AugmentOp op = static_cast<AugmentOp>(i);
    if (name == AugmentOpName(op)) return op;
  }
  return std::nullopt;
}

void ApplyAugmentOp(RgbImageView image, AugmentOp op, double magnitude,
                    Interpolation interpolation, const std::array<float, 3>& fill,
                    std::vector<uint8_t>& scratch) {
  const double w = image.width, h = image.height;
  const double degrees = 180.0 / std::numbers::pi;
  switch (op) {
    case AugmentOp::kIdentity:
      break;
    case AugmentOp::kShearX:
      // center=[0, 0]: the top-left corner, in centre-origin coordinates.
      Affine(image,
             InverseAffineMatrix({-0.5 * w, -0.5 * h}, 0.0, {0, 0}, 1.0,
                                 {std::atan(magnitude) * degrees, 0.0}),
             interpolation, fill, scratch);
      break;
    case AugmentOp::kShearY:
      Affine(image,
             InverseAffineMatrix({-0.5 * w, -0.5 * h}, 0.0, {0, 0}, 1.0,
                                 {0.0, std::atan(magnitude) * degrees}),
             interpolation, fill, scratch);
      break;
    case AugmentOp::kTranslateX:
      Affine(image,
             InverseAffineMatrix({0, 0}, 0.0, {std::trunc(magnitude), 0.0}, 1.0, {0, 0}),
             interpolation, fill, scratch);
      break;
    case AugmentOp::kTranslateY:
      Affine(image,
             InverseAffineMatrix({0, 0}, 0.0, {0.0, std::trunc(magnitude)}, 1.0, {0, 0}),
             interpolation, fill, scratch);
      break;
    case AugmentOp::kRotate:
      // F.rotate passes -angle to the affine matrix.
      Affine(image, InverseAffineMatrix({0, 0}, -magnitude, {0, 0}, 1.0, {0, 0}), interpolation,
             fill, scratch);
      break;
    case AugmentOp::kBrightness:
      AdjustBrightness(image, 1.0 + magnitude);
      break;
    case AugmentOp::kColor:
      AdjustSaturation(image, 1.0 + magnitude);
      break;
    case AugmentOp::kContrast:
      AdjustContrast(image, 1.0 + magnitude);
      break;
    case AugmentOp::kSharpness:
      AdjustSharpness(image, 1.0 + magnitude, scratch);
      break;
    case AugmentOp::kPosterize:
      Posterize(image, static_cast<int>(magnitude));
      break;
    case AugmentOp::kSolarize:
      Solarize(image, magnitude);
      break;
    case AugmentOp::kAutoContrast:
      AutoContrast(image);
      break;
    case AugmentOp::kEqualize:
      Equalize(image);
      break;
    case AugmentOp::kInvert:
      Invert(image);
      break;
  }
}

std::vector<AugmentSpaceEntry> TrivialAugmentWideSpace(int num_bins) {
  std::vector<AugmentSpaceEntry> space = CommonSpace(num_bins, 0.99, 32.0, 32.0, 135.0, 0.99, 6);
  space.insert(space.begin(), AugmentSpaceEntry{AugmentOp::kIdentity, false, {}});
  return space;
}

std::vector<AugmentSpaceEntry> RandAugmentSpace(int num_bins, int height, int width) {
  std::vector<AugmentSpaceEntry> space =
      CommonSpace(num_bins, 0.3, 150.0 / 331.0 * width, 150.0 / 331.0 * height, 30.0, 0.9, 4);
  space.insert(space.begin(), AugmentSpaceEntry{AugmentOp::kIdentity, false, {}});
  return space;
}

std::vector<AugmentSpaceEntry> AutoAugmentSpace(int num_bins, int height, int width) {
  std::vector<AugmentSpaceEntry> space =
      CommonSpace(num_bins, 0.3, 150.0 / 331.0 * width, 150.0 / 331.0 * height, 30.0, 0.9, 4);
  space.push_back(AugmentSpaceEntry{AugmentOp::kInvert, false, {}});
  return space;
}

const std::vector<SubPolicy>& AutoAugmentPolicies(AutoAugmentPolicy policy) {
  switch (policy) {
    case AutoAugmentPolicy::kCifar10:
      return kCifar10Policy;
    case AutoAugmentPolicy::kSvhn:
      return kSvhnPolicy;
    case AutoAugmentPolicy::kImageNet:
      break;
  }
  return kImageNetPolicy;
}

std::vector<AugmentChoice> DrawTrivialAugmentWide(int num_bins, Rng& rng) {
  // The space depends only on num_bins: built once per distinct value would
  // save little next to the op itself, so it is built per draw.
  const std::vector<AugmentSpaceEntry> space = TrivialAugmentWideSpace(num_bins);
  const AugmentSpaceEntry& entry = space[rng.UniformInt(space.size())];
  int bin = 0;
  if (!entry.magnitudes.empty()) bin = static_cast<int>(rng.UniformInt(entry.magnitudes.size()));
  const bool negative = entry.is_signed && RandBit(rng);
  return {Choose(entry, bin, negative)};
}

std::vector<AugmentChoice> DrawRandAugment(int num_ops, int magnitude, int num_bins, int height,
                                           int width, Rng& rng) {
  const std::vector<AugmentSpaceEntry> space = RandAugmentSpace(num_bins, height, width);
  std::vector<AugmentChoice> out;
  for (int i = 0; i < num_ops; ++i) {
    const AugmentSpaceEntry& entry = space[rng.UniformInt(space.size())];
    const bool negative = entry.is_signed && RandBit(rng);
    out.push_back(Choose(entry, magnitude, negative));
  }
  return out;
}

std::vector<AugmentChoice> DrawAutoAugment(AutoAugmentPolicy policy, int height, int width,
                                           Rng& rng) {
  const std::vector<SubPolicy>& policies = AutoAugmentPolicies(policy);
  const SubPolicy& sub = policies[rng.UniformInt(policies.size())];
  const double probs[2] = {rng.Uniform(), rng.Uniform()};
  const bool signs[2] = {RandBit(rng), RandBit(rng)};
  const std::vector<AugmentSpaceEntry> space = AutoAugmentSpace(10, height, width);
  std::vector<AugmentChoice> out;
  for (int i = 0; i < 2; ++i) {
    if (!(probs[i] <= sub[i].p)) continue;
    for (const AugmentSpaceEntry& entry : space) {
      if (entry.op != sub[i].op) continue;
      // torchvision negates when the sign bit is 0.
      out.push_back(Choose(entry, std::max(sub[i].bin, 0), !signs[i]));
    }
  }
  return out;
}

}  // namespace feedline::vision
