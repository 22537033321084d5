#include "feedline/vision/photometric_distort.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace feedline::vision {

PhotometricDistortParams DrawPhotometricDistort(const Transform& distort, Rng& rng) {
  std::array<double, 7> r;
  for (double& v : r) v = rng.Uniform();
  const double p = distort.p;
  PhotometricDistortParams params;
  params.contrast_first = r[1] < 0.5;
  // Each ColorJitter draws its own factor when it runs, in run order.
  if (r[0] < p) params.brightness = rng.Uniform(distort.brightness[0], distort.brightness[1]);
  if (params.contrast_first && r[2] < p) {
    params.contrast = rng.Uniform(distort.contrast[0], distort.contrast[1]);
  }
  if (r[3] < p) params.saturation = rng.Uniform(distort.saturation[0], distort.saturation[1]);
  if (r[4] < p) params.hue = rng.Uniform(distort.hue[0], distort.hue[1]);
  if (!params.contrast_first && r[5] < p) {
    params.contrast = rng.Uniform(distort.contrast[0], distort.contrast[1]);
  }
  if (r[6] < p) {
    for (int i = 0; i < 2; ++i) {
      const int j = i + static_cast<int>(rng.UniformInt(static_cast<uint64_t>(3 - i)));
      std::swap(params.channels[i], params.channels[j]);
    }
  }
  return params;
}

void ApplyPhotometricDistort(RgbImageView image, const PhotometricDistortParams& params) {
  if (params.brightness) AdjustBrightness(image, *params.brightness);
  if (params.contrast_first && params.contrast) AdjustContrast(image, *params.contrast);
  if (params.saturation) AdjustSaturation(image, *params.saturation);
  if (params.hue) AdjustHue(image, *params.hue);
  if (!params.contrast_first && params.contrast) AdjustContrast(image, *params.contrast);
  const std::array<int, 3>& c = params.channels;
  if (c[0] == 0 && c[1] == 1 && c[2] == 2) return;
  const size_t pixels = static_cast<size_t>(image.height) * image.width;
  uint8_t* p = image.data;
  for (size_t i = 0; i < pixels; ++i, p += 3) {
    const uint8_t in[3] = {p[0], p[1], p[2]};
    p[0] = in[c[0]];
    p[1] = in[c[1]];
    p[2] = in[c[2]];
  }
}

}  // namespace feedline::vision
