#include "feedline/vision/transforms.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

std::string FormatDouble(double value) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

template <size_t N, typename T>
std::string FormatList(const std::array<T, N>& values) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += ':';
    out += FormatDouble(static_cast<double>(values[i]));
  }
  return out;
}

const char* KindName(Transform::Kind kind) {
  switch (kind) {
    case Transform::Kind::kResize:
      return "resize";
    case Transform::Kind::kCenterCrop:
      return "center_crop";
    case Transform::Kind::kRandomResizedCrop:
      return "random_resized_crop";
    case Transform::Kind::kRandomHorizontalFlip:
      return "random_horizontal_flip";
    case Transform::Kind::kNormalize:
      return "normalize";
    case Transform::Kind::kToCHW:
      return "to_chw";
    case Transform::Kind::kColorJitter:
      return "color_jitter";
    case Transform::Kind::kTrivialAugmentWide:
      return "trivial_augment_wide";
    case Transform::Kind::kRandAugment:
      return "rand_augment";
    case Transform::Kind::kAutoAugment:
      return "auto_augment";
    case Transform::Kind::kRandomErasing:
      return "random_erasing";
    case Transform::Kind::kRandomZoomOut:
      return "random_zoom_out";
    case Transform::Kind::kRandomIoUCrop:
      return "random_iou_crop";
    case Transform::Kind::kRandomPhotometricDistort:
      return "random_photometric_distort";
    case Transform::Kind::kRandomShortestSize:
      return "random_shortest_size";
    case Transform::Kind::kScaleJitter:
      return "scale_jitter";
    case Transform::Kind::kFixedSizeCrop:
      return "fixed_size_crop";
    case Transform::Kind::kRandomHSV:
      return "random_hsv";
  }
  return "?";
}

[[noreturn]] void Invalid(const Transform& t, const std::string& what) {
  throw Error(std::string(KindName(t.kind)) + ": " + what);
}

void CheckSize(const Transform& t, int value, const char* name) {
  if (value <= 0) Invalid(t, std::string(name) + " must be > 0, got " + std::to_string(value));
}

void CheckRange(const Transform& t, const std::array<double, 2>& range, const char* name,
                double lo, double hi) {
  if (!(lo <= range[0] && range[0] <= range[1] && range[1] <= hi)) {
    Invalid(t, std::string(name) + " must satisfy " + FormatDouble(lo) + " <= min <= max <= " +
                   FormatDouble(hi) + ", got " + FormatList(range));
  }
}

void CheckAugmentInterpolation(const Transform& t) {
  if (t.interpolation != Interpolation::kNearest && t.interpolation != Interpolation::kBilinear) {
    Invalid(t, std::string("interpolation must be nearest or bilinear, got ") +
                   InterpolationName(t.interpolation));
  }
}

void CheckFill(const Transform& t, const char* name) {
  for (float v : t.fill) {
    if (!std::isfinite(v)) Invalid(t, std::string(name) + " must be finite, got " + FormatList(t.fill));
  }
}

void CheckBins(const Transform& t) {
  if (t.num_magnitude_bins < 2) {
    Invalid(t, "num_magnitude_bins must be >= 2, got " + std::to_string(t.num_magnitude_bins));
  }
}

std::string FormatVector(const std::vector<double>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ':';
    out += FormatDouble(values[i]);
  }
  return out;
}

void CheckProbability(const Transform& t) {
  if (!(t.p >= 0 && t.p <= 1)) Invalid(t, "p must be in [0, 1], got " + FormatDouble(t.p));
}

void CheckJitterRanges(const Transform& t) {
  const double inf = std::numeric_limits<double>::infinity();
  CheckRange(t, t.brightness, "brightness", 0, inf);
  CheckRange(t, t.contrast, "contrast", 0, inf);
  CheckRange(t, t.saturation, "saturation", 0, inf);
  CheckRange(t, t.hue, "hue", -0.5, 0.5);
  for (const auto* range : {&t.brightness, &t.contrast, &t.saturation}) {
    if (!std::isfinite((*range)[1])) Invalid(t, "factor ranges must be finite");
  }
}

// Python's round(): half to even (the default floating-point rounding mode).
int RoundHalfEven(double value) { return static_cast<int>(std::nearbyint(value)); }

}  // namespace

const char* AutoAugmentPolicyName(AutoAugmentPolicy policy) {
  switch (policy) {
    case AutoAugmentPolicy::kImageNet:
      return "imagenet";
    case AutoAugmentPolicy::kCifar10:
      return "cifar10";
    case AutoAugmentPolicy::kSvhn:
      return "svhn";
  }
  return "?";
}

AutoAugmentPolicy ParseAutoAugmentPolicy(std::string_view name) {
  for (AutoAugmentPolicy p :
       {AutoAugmentPolicy::kImageNet, AutoAugmentPolicy::kCifar10, AutoAugmentPolicy::kSvhn}) {
    if (name == AutoAugmentPolicyName(p)) return p;
  }
  throw Error("policy must be 'imagenet', 'cifar10' or 'svhn', got '" + std::string(name) + "'");
}

Interpolation ParseInterpolation(std::string_view name) {
  for (Interpolation i :
       {Interpolation::kBilinear, Interpolation::kNearest, Interpolation::kArea}) {
    if (name == InterpolationName(i)) return i;
  }
  throw Error("interpolation must be 'bilinear', 'nearest' or 'area', got '" + std::string(name) +
              "'");
}

const char* InterpolationName(Interpolation interpolation) {
  switch (interpolation) {
    case Interpolation::kBilinear:
      return "bilinear";
    case Interpolation::kNearest:
      return "nearest";
    case Interpolation::kArea:
      return "area";
  }
  return "?";
}

Transform Transform::Resize(int size, Interpolation interpolation, int max_size) {
  Transform t;
  t.kind = Kind::kResize;
  t.height = size;
  t.interpolation = interpolation;
  t.max_size = max_size;
  t.Validate();
  return t;
}

Transform Transform::Resize(int height, int width, Interpolation interpolation) {
  Transform t;
  t.kind = Kind::kResize;
  t.height = height;
  t.width = width;
  t.interpolation = interpolation;
  if (width <= 0) Invalid(t, "width must be > 0, got " + std::to_string(width));
  t.Validate();
  return t;
}

Transform Transform::CenterCrop(int size) { return CenterCrop(size, size); }

Transform Transform::CenterCrop(int height, int width) {
  Transform t;
  t.kind = Kind::kCenterCrop;
  t.height = height;
  t.width = width;
  t.Validate();
  return t;
}

Transform Transform::RandomResizedCrop(int size, std::array<double, 2> scale,
                                       std::array<double, 2> ratio, Interpolation interpolation) {
  return RandomResizedCrop(size, size, scale, ratio, interpolation);
}

Transform Transform::RandomResizedCrop(int height, int width, std::array<double, 2> scale,
                                       std::array<double, 2> ratio, Interpolation interpolation) {
  Transform t;
  t.kind = Kind::kRandomResizedCrop;
  t.height = height;
  t.width = width;
  t.scale = scale;
  t.ratio = ratio;
  t.interpolation = interpolation;
  t.Validate();
  return t;
}

Transform Transform::RandomHorizontalFlip(double p) {
  Transform t;
  t.kind = Kind::kRandomHorizontalFlip;
  t.p = p;
  t.Validate();
  return t;
}

Transform Transform::Normalize(std::array<float, 3> mean, std::array<float, 3> std) {
  Transform t;
  t.kind = Kind::kNormalize;
  t.mean = mean;
  t.std = std;
  t.Validate();
  return t;
}

Transform Transform::ToCHW() {
  Transform t;
  t.kind = Kind::kToCHW;
  return t;
}

Transform Transform::ColorJitter(std::array<double, 2> brightness, std::array<double, 2> contrast,
                                 std::array<double, 2> saturation, std::array<double, 2> hue) {
  Transform t;
  t.kind = Kind::kColorJitter;
  t.brightness = brightness;
  t.contrast = contrast;
  t.saturation = saturation;
  t.hue = hue;
  t.Validate();
  return t;
}

Transform Transform::TrivialAugmentWide(int num_magnitude_bins, Interpolation interpolation,
                                        std::array<float, 3> fill) {
  Transform t;
  t.kind = Kind::kTrivialAugmentWide;
  t.num_magnitude_bins = num_magnitude_bins;
  t.interpolation = interpolation;
  t.fill = fill;
  t.Validate();
  return t;
}

Transform Transform::RandAugment(int num_ops, int magnitude, int num_magnitude_bins,
                                 Interpolation interpolation, std::array<float, 3> fill) {
  Transform t;
  t.kind = Kind::kRandAugment;
  t.num_ops = num_ops;
  t.magnitude = magnitude;
  t.num_magnitude_bins = num_magnitude_bins;
  t.interpolation = interpolation;
  t.fill = fill;
  t.Validate();
  return t;
}

Transform Transform::AutoAugment(AutoAugmentPolicy policy, Interpolation interpolation,
                                 std::array<float, 3> fill) {
  Transform t;
  t.kind = Kind::kAutoAugment;
  t.policy = policy;
  t.interpolation = interpolation;
  t.fill = fill;
  t.Validate();
  return t;
}

Transform Transform::RandomErasing(double p, std::array<double, 2> scale,
                                   std::array<double, 2> ratio, std::array<float, 3> value,
                                   bool random_value) {
  Transform t;
  t.kind = Kind::kRandomErasing;
  t.p = p;
  t.scale = scale;
  t.ratio = ratio;
  t.fill = value;
  t.random_value = random_value;
  t.Validate();
  return t;
}

Transform Transform::RandomZoomOut(std::array<float, 3> fill, std::array<double, 2> side_range,
                                   double p) {
  Transform t;
  t.kind = Kind::kRandomZoomOut;
  t.fill = fill;
  t.side_range = side_range;
  t.p = p;
  t.Validate();
  return t;
}

Transform Transform::RandomIoUCrop(std::array<double, 2> scale, std::array<double, 2> ratio,
                                   std::vector<double> options, int trials) {
  Transform t;
  t.kind = Kind::kRandomIoUCrop;
  t.scale = scale;
  t.ratio = ratio;
  t.iou_options = std::move(options);
  t.trials = trials;
  t.Validate();
  return t;
}

Transform Transform::RandomHSV(double hgain, double sgain, double vgain) {
  Transform t;
  t.kind = Kind::kRandomHSV;
  t.hue = {-hgain, hgain};
  t.saturation = {-sgain, sgain};
  t.brightness = {-vgain, vgain};
  t.Validate();
  return t;
}

Transform Transform::RandomPhotometricDistort(std::array<double, 2> contrast,
                                              std::array<double, 2> saturation,
                                              std::array<double, 2> hue,
                                              std::array<double, 2> brightness, double p) {
  Transform t;
  t.kind = Kind::kRandomPhotometricDistort;
  t.contrast = contrast;
  t.saturation = saturation;
  t.hue = hue;
  t.brightness = brightness;
  t.p = p;
  t.Validate();
  return t;
}

Transform Transform::RandomShortestSize(std::vector<int> sizes, int max_size,
                                        Interpolation interpolation) {
  Transform t;
  t.kind = Kind::kRandomShortestSize;
  t.sizes = std::move(sizes);
  t.max_size = max_size;
  t.interpolation = interpolation;
  t.Validate();
  return t;
}

Transform Transform::ScaleJitter(int target_height, int target_width,
                                 std::array<double, 2> scale_range, Interpolation interpolation) {
  Transform t;
  t.kind = Kind::kScaleJitter;
  t.height = target_height;
  t.width = target_width;
  t.scale = scale_range;
  t.interpolation = interpolation;
  t.Validate();
  return t;
}

Transform Transform::FixedSizeCrop(int height, int width, std::array<float, 3> fill) {
  Transform t;
  t.kind = Kind::kFixedSizeCrop;
  t.height = height;
  t.width = width;
  t.fill = fill;
  t.Validate();
  return t;
}

bool Transform::IsPixelAugmentation() const {
  return kind == Kind::kColorJitter || kind == Kind::kTrivialAugmentWide ||
         kind == Kind::kRandAugment || kind == Kind::kAutoAugment ||
         kind == Kind::kRandomPhotometricDistort || kind == Kind::kRandomHSV;
}

bool Transform::IsDetectionGeometry() const {
  return kind == Kind::kRandomZoomOut || kind == Kind::kRandomIoUCrop ||
         kind == Kind::kRandomShortestSize || kind == Kind::kScaleJitter;
}

void Transform::Validate() const {
  switch (kind) {
    case Kind::kResize:
      CheckSize(*this, height, width == 0 ? "size" : "height");
      if (width < 0) Invalid(*this, "width must be >= 0, got " + std::to_string(width));
      if (max_size < 0 || (max_size > 0 && (width != 0 || max_size <= height))) {
        Invalid(*this, "max_size must be 0 (none) or greater than the size " +
                           std::to_string(height) + " and only with a single size, got " +
                           std::to_string(max_size));
      }
      break;
    case Kind::kCenterCrop:
      CheckSize(*this, height, "height");
      CheckSize(*this, width, "width");
      break;
    case Kind::kRandomResizedCrop:
      CheckSize(*this, height, "height");
      CheckSize(*this, width, "width");
      if (!(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1e6)) {
        Invalid(*this, "scale must satisfy 0 < scale[0] <= scale[1], got " + FormatList(scale));
      }
      if (!(ratio[0] > 0 && ratio[0] <= ratio[1] && std::isfinite(ratio[1]))) {
        Invalid(*this, "ratio must satisfy 0 < ratio[0] <= ratio[1], got " + FormatList(ratio));
      }
      break;
    case Kind::kRandomHorizontalFlip:
      if (!(p >= 0 && p <= 1)) Invalid(*this, "p must be in [0, 1], got " + FormatDouble(p));
      break;
    case Kind::kNormalize:
      for (int c = 0; c < 3; ++c) {
        if (!(std[c] != 0 && std::isfinite(std[c]) && std::isfinite(mean[c]))) {
          Invalid(*this, "std must be non-zero and mean and std finite, got mean " +
                             FormatList(mean) + ", std " + FormatList(std));
        }
      }
      break;
    case Kind::kToCHW:
      break;
    case Kind::kColorJitter:
      CheckJitterRanges(*this);
      break;
    case Kind::kRandomPhotometricDistort:
      CheckJitterRanges(*this);
      CheckProbability(*this);
      break;
    case Kind::kRandomHSV: {
      const std::array<std::array<double, 2>, 3> ranges = {hue, saturation, brightness};
      const char* names[3] = {"hgain", "sgain", "vgain"};
      for (int c = 0; c < 3; ++c) {
        const double gain = ranges[c][1];
        if (!(gain >= 0 && gain <= 1 && ranges[c][0] == -gain)) {
          Invalid(*this, std::string(names[c]) + " must be in [0, 1], got " + FormatDouble(gain));
        }
      }
      break;
    }
    case Kind::kRandomZoomOut:
      CheckProbability(*this);
      // A side of 4 makes 16 times the pixels; more is a typo.
      if (!(side_range[0] >= 1 && side_range[0] <= side_range[1] && side_range[1] <= 16)) {
        Invalid(*this, "side_range must satisfy 1 <= min <= max <= 16, got " +
                           FormatList(side_range));
      }
      for (float v : fill) {
        if (!(v >= 0 && v < 256)) Invalid(*this, "fill must be in [0, 256), got " + FormatList(fill));
      }
      break;
    case Kind::kRandomShortestSize:
      if (sizes.empty() || sizes.size() > 256) {
        Invalid(*this, "sizes must list 1 to 256 short sides, got " + std::to_string(sizes.size()));
      }
      for (int size : sizes) CheckSize(*this, size, "each size");
      CheckSize(*this, max_size, "max_size");
      if (interpolation == Interpolation::kArea) Invalid(*this, "interpolation must be bilinear or nearest");
      break;
    case Kind::kScaleJitter:
      CheckSize(*this, height, "target height");
      CheckSize(*this, width, "target width");
      if (height > (1 << 20) || width > (1 << 20)) {
        Invalid(*this, "the target size must be at most 1048576 a side, got " +
                           std::to_string(height) + "x" + std::to_string(width));
      }
      if (!(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 16)) {
        Invalid(*this, "scale_range must satisfy 0 < min <= max <= 16, got " + FormatList(scale));
      }
      if (interpolation == Interpolation::kArea) Invalid(*this, "interpolation must be bilinear or nearest");
      break;
    case Kind::kFixedSizeCrop:
      CheckSize(*this, height, "height");
      CheckSize(*this, width, "width");
      for (float v : fill) {
        if (!(v >= 0 && v < 256)) Invalid(*this, "fill must be in [0, 256), got " + FormatList(fill));
      }
      break;
    case Kind::kRandomIoUCrop:
      if (!(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1)) {
        Invalid(*this, "scale must satisfy 0 < min <= max <= 1, got " + FormatList(scale));
      }
      if (!(ratio[0] > 0 && ratio[0] <= ratio[1] && std::isfinite(ratio[1]))) {
        Invalid(*this, "ratio must satisfy 0 < min <= max, got " + FormatList(ratio));
      }
      if (iou_options.empty() || iou_options.size() > 64) {
        Invalid(*this, "options must list 1 to 64 minimum IoUs, got " +
                           std::to_string(iou_options.size()));
      }
      for (double v : iou_options) {
        if (!std::isfinite(v)) Invalid(*this, "options must be finite, got " + FormatVector(iou_options));
      }
      if (trials < 1 || trials > 10000) {
        Invalid(*this, "trials must be in [1, 10000], got " + std::to_string(trials));
      }
      break;
    case Kind::kTrivialAugmentWide:
      CheckBins(*this);
      CheckAugmentInterpolation(*this);
      CheckFill(*this, "fill");
      break;
    case Kind::kRandAugment:
      CheckBins(*this);
      if (num_ops < 0) Invalid(*this, "num_ops must be >= 0, got " + std::to_string(num_ops));
      if (magnitude < 0 || magnitude >= num_magnitude_bins) {
        Invalid(*this, "magnitude must be in [0, num_magnitude_bins - 1] = [0, " +
                           std::to_string(num_magnitude_bins - 1) + "], got " +
                           std::to_string(magnitude));
      }
      CheckAugmentInterpolation(*this);
      CheckFill(*this, "fill");
      break;
    case Kind::kAutoAugment:
      if (policy != AutoAugmentPolicy::kImageNet && policy != AutoAugmentPolicy::kCifar10 &&
          policy != AutoAugmentPolicy::kSvhn) {
        Invalid(*this, "policy must be imagenet, cifar10 or svhn");
      }
      CheckAugmentInterpolation(*this);
      CheckFill(*this, "fill");
      break;
    case Kind::kRandomErasing:
      if (!(p >= 0 && p <= 1)) Invalid(*this, "p must be in [0, 1], got " + FormatDouble(p));
      CheckRange(*this, scale, "scale", 0, 1);
      if (!(ratio[0] > 0 && ratio[0] <= ratio[1] && std::isfinite(ratio[1]))) {
        Invalid(*this, "ratio must satisfy 0 < ratio[0] <= ratio[1], got " + FormatList(ratio));
      }
      if (!random_value) CheckFill(*this, "value");
      break;
  }
}

std::string Transform::ToString() const {
  std::string out = KindName(kind);
  std::string args;
  auto add = [&args](const std::string& arg) {
    if (!args.empty()) args += ',';
    args += arg;
  };
  const Transform defaults;
  switch (kind) {
    case Kind::kResize:
      add(std::to_string(height));
      if (width != 0) add(std::to_string(width));
      if (max_size != 0) add("max_size=" + std::to_string(max_size));
      if (interpolation != defaults.interpolation) {
        add(std::string("interpolation=") + InterpolationName(interpolation));
      }
      break;
    case Kind::kCenterCrop:
    case Kind::kRandomResizedCrop:
      add(std::to_string(height));
      if (width != height) add(std::to_string(width));
      if (kind == Kind::kCenterCrop) break;
      if (scale != defaults.scale) add("scale=" + FormatList(scale));
      if (ratio != defaults.ratio) add("ratio=" + FormatList(ratio));
      if (interpolation != defaults.interpolation) {
        add(std::string("interpolation=") + InterpolationName(interpolation));
      }
      break;
    case Kind::kRandomHorizontalFlip:
      add(FormatDouble(p));
      break;
    case Kind::kNormalize:
      if (mean != kImageNetMean) add("mean=" + FormatList(mean));
      if (std != kImageNetStd) add("std=" + FormatList(std));
      break;
    case Kind::kToCHW:
      break;
    case Kind::kRandomZoomOut: {
      const Transform zoom_defaults = RandomZoomOut();
      if (fill != zoom_defaults.fill) add("fill=" + FormatList(fill));
      if (side_range != zoom_defaults.side_range) add("side_range=" + FormatList(side_range));
      if (p != zoom_defaults.p) add("p=" + FormatDouble(p));
      break;
    }
    case Kind::kRandomIoUCrop: {
      const Transform crop_defaults = RandomIoUCrop();
      if (scale != crop_defaults.scale) add("scale=" + FormatList(scale));
      if (ratio != crop_defaults.ratio) add("ratio=" + FormatList(ratio));
      if (iou_options != crop_defaults.iou_options) add("options=" + FormatVector(iou_options));
      if (trials != crop_defaults.trials) add("trials=" + std::to_string(trials));
      break;
    }
    case Kind::kRandomPhotometricDistort: {
      const Transform distort_defaults = RandomPhotometricDistort();
      if (contrast != distort_defaults.contrast) add("contrast=" + FormatList(contrast));
      if (saturation != distort_defaults.saturation) add("saturation=" + FormatList(saturation));
      if (hue != distort_defaults.hue) add("hue=" + FormatList(hue));
      if (brightness != distort_defaults.brightness) add("brightness=" + FormatList(brightness));
      if (p != distort_defaults.p) add("p=" + FormatDouble(p));
      break;
    }
    case Kind::kRandomHSV: {
      const Transform hsv_defaults = RandomHSV();
      if (hue != hsv_defaults.hue) add("hgain=" + FormatDouble(hue[1]));
      if (saturation != hsv_defaults.saturation) add("sgain=" + FormatDouble(saturation[1]));
      if (brightness != hsv_defaults.brightness) add("vgain=" + FormatDouble(brightness[1]));
      break;
    }
    case Kind::kRandomShortestSize: {
      std::string sizes_text;
      for (int size : sizes) sizes_text += (sizes_text.empty() ? "" : ":") + std::to_string(size);
      add("sizes=" + sizes_text);
      add("max_size=" + std::to_string(max_size));
      if (interpolation != defaults.interpolation) {
        add(std::string("interpolation=") + InterpolationName(interpolation));
      }
      break;
    }
    case Kind::kScaleJitter:
      add(std::to_string(height));
      add(std::to_string(width));
      if (scale != ScaleJitter(1, 1).scale) add("scale=" + FormatList(scale));
      if (interpolation != defaults.interpolation) {
        add(std::string("interpolation=") + InterpolationName(interpolation));
      }
      break;
    case Kind::kFixedSizeCrop:
      add(std::to_string(height));
      add(std::to_string(width));
      if (fill != defaults.fill) add("fill=" + FormatList(fill));
      break;
    case Kind::kColorJitter:
      if (brightness != defaults.brightness) add("brightness=" + FormatList(brightness));
      if (contrast != defaults.contrast) add("contrast=" + FormatList(contrast));
      if (saturation != defaults.saturation) add("saturation=" + FormatList(saturation));
      if (hue != defaults.hue) add("hue=" + FormatList(hue));
      break;
    case Kind::kRandAugment:
      if (num_ops != defaults.num_ops) add("num_ops=" + std::to_string(num_ops));
      if (magnitude != defaults.magnitude) add("magnitude=" + std::to_string(magnitude));
      [[fallthrough]];
    case Kind::kTrivialAugmentWide:
      if (num_magnitude_bins != defaults.num_magnitude_bins) {
        add("num_magnitude_bins=" + std::to_string(num_magnitude_bins));
      }
      [[fallthrough]];
    case Kind::kAutoAugment:
      if (kind == Kind::kAutoAugment && policy != defaults.policy) {
        add(std::string("policy=") + AutoAugmentPolicyName(policy));
      }
      if (interpolation != Interpolation::kNearest) {
        add(std::string("interpolation=") + InterpolationName(interpolation));
      }
      if (fill != defaults.fill) add("fill=" + FormatList(fill));
      break;
    case Kind::kRandomErasing: {
      const Transform erasing_defaults = RandomErasing();
      add(FormatDouble(p));
      if (scale != erasing_defaults.scale) add("scale=" + FormatList(scale));
      if (ratio != erasing_defaults.ratio) add("ratio=" + FormatList(ratio));
      if (random_value) {
        add("value=random");
      } else if (fill != erasing_defaults.fill) {
        add("value=" + FormatList(fill));
      }
      break;
    }
  }
  if (!args.empty()) out += "(" + args + ")";
  return out;
}

CropBox RandomResizedCropBox(int height, int width, const std::array<double, 2>& scale,
                             const std::array<double, 2>& ratio, Rng& rng) {
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(ratio[0]);
  const double log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.Uniform(scale[0], scale[1]);
    const double aspect_ratio = std::exp(rng.Uniform(log_lo, log_hi));
    const int w = RoundHalfEven(std::sqrt(target_area * aspect_ratio));
    const int h = RoundHalfEven(std::sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int top = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(height - h + 1)));
      const int left = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(width - w + 1)));
      return CropBox{top, left, h, w};
    }
  }
  // Fallback: the central crop, clamped to the ratio range.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width;
  int h = height;
  if (in_ratio < ratio[0]) {
    h = RoundHalfEven(w / ratio[0]);
  } else if (in_ratio > ratio[1]) {
    w = RoundHalfEven(h * ratio[1]);
  }
  return CropBox{(height - h) / 2, (width - w) / 2, h, w};
}

std::array<int, 2> ResizedSize(const Transform& resize, int height, int width) {
  if (resize.width != 0) return {resize.height, resize.width};
  const bool portrait = width <= height;
  const int short_side = portrait ? width : height;
  const int long_side = portrait ? height : width;
  int new_short = resize.height;
  // Clamped to an int: a sliver (1 x 80M) resized to 256 would overflow; the
  // pipeline refuses such an output by its pixel count.
  int new_long = static_cast<int>(std::min(
      static_cast<double>(int64_t{new_short} * long_side) / static_cast<double>(short_side),
      static_cast<double>(INT32_MAX)));
  if (resize.max_size > 0 && new_long > resize.max_size) {
    new_short = static_cast<int>(static_cast<double>(int64_t{resize.max_size} * new_short) /
                                 static_cast<double>(new_long));
    new_long = resize.max_size;
  }
  // A sliver of an image (1 x 5000) would round its short side to zero.
  new_short = std::max(new_short, 1);
  return portrait ? std::array<int, 2>{new_long, new_short}
                  : std::array<int, 2>{new_short, new_long};
}

// ---- Parsing ---------------------------------------------------------------

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(separator, start);
    parts.push_back(Trim(s.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

class ItemParser {
 public:
  explicit ItemParser(std::string_view item) : item_(item) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw Error("transform '" + std::string(item_) + "': " + what);
  }

  double Number(std::string_view text) const {
    double value = 0;
    const char* end = text.data() + text.size();
    auto result = std::from_chars(text.data(), end, value);
    if (text.empty() || result.ec != std::errc() || result.ptr != end) {
      Fail("'" + std::string(text) + "' is not a number");
    }
    return value;
  }

  int Integer(std::string_view text) const {
    int value = 0;
    const char* end = text.data() + text.size();
    auto result = std::from_chars(text.data(), end, value);
    if (text.empty() || result.ec != std::errc() || result.ptr != end) {
      Fail("'" + std::string(text) + "' is not an integer");
    }
    return value;
  }

  template <size_t N, typename T>
  std::array<T, N> List(std::string_view text) const {
    std::vector<std::string_view> parts = Split(text, ':');
    if (parts.size() != N) {
      Fail("'" + std::string(text) + "' must be " + std::to_string(N) +
           " numbers separated by ':'");
    }
    std::array<T, N> out;
    for (size_t i = 0; i < N; ++i) out[i] = static_cast<T>(Number(parts[i]));
    return out;
  }

  std::vector<double> Numbers(std::string_view text) const {
    std::vector<double> out;
    for (std::string_view part : Split(text, ':')) out.push_back(Number(part));
    return out;
  }

  // The library's parsers, with this item named in the message.
  Interpolation ParseInterpolation(std::string_view text) const {
    try {
      return vision::ParseInterpolation(text);
    } catch (const Error& e) {
      Fail(e.what());
    }
  }

  AutoAugmentPolicy ParsePolicy(std::string_view text) const {
    try {
      return ParseAutoAugmentPolicy(text);
    } catch (const Error& e) {
      Fail(e.what());
    }
  }

 private:
  std::string_view item_;
};

// "RandomResizedCrop" and "random_resized_crop" both become
// "randomresizedcrop".
std::string Canonical(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

Transform ParseItem(std::string_view item) {
  ItemParser parser(item);
  std::string_view name = item;
  std::string_view arg_text;
  const size_t open = item.find('(');
  if (open != std::string_view::npos) {
    if (item.back() != ')') parser.Fail("missing ')'");
    name = Trim(item.substr(0, open));
    arg_text = Trim(item.substr(open + 1, item.size() - open - 2));
  }
  std::vector<std::string_view> positional;
  std::vector<std::pair<std::string_view, std::string_view>> named;
  if (!arg_text.empty()) {
    for (std::string_view arg : Split(arg_text, ',')) {
      const size_t eq = arg.find('=');
      if (eq == std::string_view::npos) {
        if (!named.empty()) parser.Fail("positional argument after key=value");
        positional.push_back(arg);
      } else {
        named.emplace_back(Trim(arg.substr(0, eq)), Trim(arg.substr(eq + 1)));
      }
    }
  }

  Transform t;
  const std::string kind = Canonical(name);
  size_t max_positional = 2;
  if (kind == "resize") {
    t.kind = Transform::Kind::kResize;
  } else if (kind == "centercrop") {
    t.kind = Transform::Kind::kCenterCrop;
  } else if (kind == "randomresizedcrop") {
    t.kind = Transform::Kind::kRandomResizedCrop;
  } else if (kind == "randomhorizontalflip") {
    t.kind = Transform::Kind::kRandomHorizontalFlip;
    max_positional = 1;
  } else if (kind == "normalize") {
    t.kind = Transform::Kind::kNormalize;
    max_positional = 0;
  } else if (kind == "tochw") {
    t.kind = Transform::Kind::kToCHW;
    max_positional = 0;
  } else if (kind == "colorjitter") {
    t = Transform::ColorJitter();
    max_positional = 0;
  } else if (kind == "trivialaugmentwide") {
    t = Transform::TrivialAugmentWide();
    max_positional = 0;
  } else if (kind == "randaugment") {
    t = Transform::RandAugment();
    max_positional = 0;
  } else if (kind == "autoaugment") {
    t = Transform::AutoAugment();
    max_positional = 0;
  } else if (kind == "randomerasing") {
    t = Transform::RandomErasing();
    max_positional = 1;
  } else if (kind == "randomzoomout") {
    t = Transform::RandomZoomOut();
    max_positional = 0;
  } else if (kind == "randomioucrop") {
    t = Transform::RandomIoUCrop();
    max_positional = 0;
  } else if (kind == "randomphotometricdistort") {
    t = Transform::RandomPhotometricDistort();
    max_positional = 0;
  } else if (kind == "randomshortestsize") {
    t.kind = Transform::Kind::kRandomShortestSize;
    max_positional = 0;
  } else if (kind == "scalejitter") {
    t = Transform::ScaleJitter(1, 1);
  } else if (kind == "fixedsizecrop") {
    t.kind = Transform::Kind::kFixedSizeCrop;
  } else if (kind == "randomhsv") {
    t = Transform::RandomHSV();
    max_positional = 0;
  } else {
    parser.Fail(
        "unknown transform; expected resize, center_crop, random_resized_crop, "
        "random_horizontal_flip, normalize, to_chw, color_jitter, trivial_augment_wide, "
        "rand_augment, auto_augment, random_erasing, random_zoom_out, random_iou_crop, "
        "random_photometric_distort, random_shortest_size, scale_jitter, fixed_size_crop or "
        "random_hsv");
  }
  using Kind = Transform::Kind;
  const bool augment = t.kind == Kind::kTrivialAugmentWide || t.kind == Kind::kRandAugment ||
                       t.kind == Kind::kAutoAugment;
  if (positional.size() > max_positional) parser.Fail("too many arguments");

  if (t.kind == Transform::Kind::kRandomHorizontalFlip || t.kind == Kind::kRandomErasing) {
    if (!positional.empty()) t.p = parser.Number(positional[0]);
  } else if (max_positional == 2) {
    if (positional.empty()) parser.Fail("needs a size");
    t.height = parser.Integer(positional[0]);
    t.width = positional.size() == 2               ? parser.Integer(positional[1])
              : t.kind == Transform::Kind::kResize ? 0
                                                   : t.height;
    if (t.kind == Transform::Kind::kResize && positional.size() == 2 && t.width <= 0) {
      parser.Fail("width must be > 0");
    }
  }
  for (const auto& [key, value] : named) {
    const bool geometric =
        t.kind == Transform::Kind::kResize || t.kind == Transform::Kind::kRandomResizedCrop;
    const bool erasing = t.kind == Kind::kRandomErasing;
    const bool jitter = t.kind == Kind::kColorJitter || t.kind == Kind::kRandomPhotometricDistort;
    const bool zoom = t.kind == Kind::kRandomZoomOut;
    const bool iou_crop = t.kind == Kind::kRandomIoUCrop;
    const bool shortest = t.kind == Kind::kRandomShortestSize;
    const bool jitter_size = t.kind == Kind::kScaleJitter;
    if (key == "interpolation" && (geometric || augment || shortest || jitter_size)) {
      t.interpolation = parser.ParseInterpolation(value);
    } else if (jitter && key == "brightness") {
      t.brightness = parser.List<2, double>(value);
    } else if (jitter && key == "contrast") {
      t.contrast = parser.List<2, double>(value);
    } else if (jitter && key == "saturation") {
      t.saturation = parser.List<2, double>(value);
    } else if (jitter && key == "hue") {
      t.hue = parser.List<2, double>(value);
    } else if (key == "num_ops" && t.kind == Kind::kRandAugment) {
      t.num_ops = parser.Integer(value);
    } else if (key == "magnitude" && t.kind == Kind::kRandAugment) {
      t.magnitude = parser.Integer(value);
    } else if (key == "num_magnitude_bins" &&
               (t.kind == Kind::kRandAugment || t.kind == Kind::kTrivialAugmentWide)) {
      t.num_magnitude_bins = parser.Integer(value);
    } else if (key == "policy" && t.kind == Kind::kAutoAugment) {
      t.policy = parser.ParsePolicy(value);
    } else if (shortest && key == "sizes") {
      t.sizes.clear();
      for (double size : parser.Numbers(value)) {
        if (!(size >= 1 && size <= INT32_MAX && size == std::floor(size))) {
          parser.Fail("sizes must be whole numbers from 1");
        }
        t.sizes.push_back(static_cast<int>(size));
      }
    } else if (shortest && key == "max_size") {
      t.max_size = parser.Integer(value);
    } else if (jitter_size && key == "scale") {
      t.scale = parser.List<2, double>(value);
    } else if (key == "fill" && (augment || zoom || t.kind == Kind::kFixedSizeCrop)) {
      t.fill = parser.List<3, float>(value);
    } else if (zoom && key == "side_range") {
      t.side_range = parser.List<2, double>(value);
    } else if (t.kind == Kind::kRandomHSV && (key == "hgain" || key == "sgain" || key == "vgain")) {
      const double gain = parser.Number(value);
      std::array<double, 2>& range =
          key == "hgain" ? t.hue : key == "sgain" ? t.saturation : t.brightness;
      range = {-gain, gain};
    } else if (key == "p" && (zoom || t.kind == Kind::kRandomPhotometricDistort)) {
      t.p = parser.Number(value);
    } else if (iou_crop && key == "scale") {
      t.scale = parser.List<2, double>(value);
    } else if (iou_crop && key == "ratio") {
      t.ratio = parser.List<2, double>(value);
    } else if (iou_crop && key == "options") {
      t.iou_options = parser.Numbers(value);
    } else if (iou_crop && key == "trials") {
      t.trials = parser.Integer(value);
    } else if (erasing && (key == "scale" || key == "ratio" || key == "p")) {
      if (key == "p") t.p = parser.Number(value);
      if (key == "scale") t.scale = parser.List<2, double>(value);
      if (key == "ratio") t.ratio = parser.List<2, double>(value);
    } else if (erasing && key == "value") {
      t.random_value = value == "random";
      if (!t.random_value) t.fill = parser.List<3, float>(value);
    } else if (key == "max_size" && t.kind == Transform::Kind::kResize) {
      t.max_size = parser.Integer(value);
    } else if (key == "scale" && t.kind == Transform::Kind::kRandomResizedCrop) {
      t.scale = parser.List<2, double>(value);
    } else if (key == "ratio" && t.kind == Transform::Kind::kRandomResizedCrop) {
      t.ratio = parser.List<2, double>(value);
    } else if (key == "p" && t.kind == Transform::Kind::kRandomHorizontalFlip) {
      t.p = parser.Number(value);
    } else if (key == "mean" && t.kind == Transform::Kind::kNormalize) {
      t.mean = parser.List<3, float>(value);
    } else if (key == "std" && t.kind == Transform::Kind::kNormalize) {
      t.std = parser.List<3, float>(value);
    } else {
      parser.Fail("unknown argument '" + std::string(key) + "'");
    }
  }
  try {
    t.Validate();
  } catch (const Error& e) {
    parser.Fail(e.what());
  }
  return t;
}

}  // namespace

std::vector<Transform> ParseTransforms(std::string_view spec) {
  std::vector<Transform> out;
  if (Trim(spec).empty()) return out;
  for (std::string_view item : Split(spec, ';')) {
    if (item.empty()) throw Error("transforms '" + std::string(spec) + "': empty item");
    out.push_back(ParseItem(item));
  }
  return out;
}

std::string TransformsToString(const std::vector<Transform>& transforms) {
  std::string out;
  for (const Transform& t : transforms) {
    if (!out.empty()) out += "; ";
    out += t.ToString();
  }
  return out;
}

}  // namespace feedline::vision
