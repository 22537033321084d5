#include "feedline/vision/color_jitter.h"

#include <utility>

namespace feedline::vision {
namespace {

// ColorJitter._check_input: a range equal to {center, center} is None.
std::optional<double> DrawFactor(const std::array<double, 2>& range, double center, Rng& rng) {
  if (range[0] == center && range[1] == center) return std::nullopt;
  return rng.Uniform(range[0], range[1]);
}

}  // namespace

ColorJitterParams DrawColorJitter(const Transform& jitter, Rng& rng) {
  ColorJitterParams params;
  for (int i = 0; i < 3; ++i) {
    const int j = i + static_cast<int>(rng.UniformInt(static_cast<uint64_t>(4 - i)));
    std::swap(params.order[i], params.order[j]);
  }
  params.brightness = DrawFactor(jitter.brightness, 1.0, rng);
  params.contrast = DrawFactor(jitter.contrast, 1.0, rng);
  params.saturation = DrawFactor(jitter.saturation, 1.0, rng);
  params.hue = DrawFactor(jitter.hue, 0.0, rng);
  return params;
}

void ApplyColorJitter(RgbImageView image, const ColorJitterParams& params) {
  for (int step : params.order) {
    if (step == 0 && params.brightness) AdjustBrightness(image, *params.brightness);
    if (step == 1 && params.contrast) AdjustContrast(image, *params.contrast);
    if (step == 2 && params.saturation) AdjustSaturation(image, *params.saturation);
    if (step == 3 && params.hue) AdjustHue(image, *params.hue);
  }
}

}  // namespace feedline::vision
