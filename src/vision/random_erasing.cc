#include "feedline/vision/random_erasing.h"

#include <cmath>
#include <cstdint>
#include <numbers>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

// Python's round(): half to even.
int RoundHalfEven(double value) { return static_cast<int>(std::nearbyint(value)); }

// Standard normal values by the Box-Muller transform (both of each pair).
void FillNormal(Rng& rng, float* out, size_t n) {
  for (size_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - rng.Uniform();  // (0, 1]: log is finite
    const double u2 = rng.Uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    out[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < n) out[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
}

template <typename T, typename Convert>
void Erase(T* data, int height, int width, bool chw, const ErasingBox& box,
           const Transform& erasing, const std::vector<float>& noise,
           const ErasingNormalization& normalization, Convert convert) {
  const size_t plane = static_cast<size_t>(height) * width;
  for (int c = 0; c < 3; ++c) {
    const float mean = normalization.mean[c];
    const float std = normalization.std[c];
    const float constant = (erasing.fill[c] - mean) / std;
    for (int y = 0; y < box.height; ++y) {
      for (int x = 0; x < box.width; ++x) {
        float v = constant;
        if (erasing.random_value) {
          v = (noise[(static_cast<size_t>(c) * box.height + y) * box.width + x] - mean) / std;
        }
        const size_t row = static_cast<size_t>(box.top + y), col = static_cast<size_t>(box.left + x);
        const size_t at = chw ? c * plane + row * width + col : (row * width + col) * 3 + c;
        data[at] = convert(v);
      }
    }
  }
}

}  // namespace

ErasingBox DrawRandomErasing(const Transform& erasing, int height, int width, int channels,
                             Rng& rng, std::vector<float>* noise) {
  ErasingBox box;
  if (!(rng.Uniform() < erasing.p)) return box;
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(erasing.ratio[0]);
  const double log_hi = std::log(erasing.ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * rng.Uniform(erasing.scale[0], erasing.scale[1]);
    const double aspect_ratio = std::exp(rng.Uniform(log_lo, log_hi));
    const int h = RoundHalfEven(std::sqrt(erase_area * aspect_ratio));
    const int w = RoundHalfEven(std::sqrt(erase_area / aspect_ratio));
    if (!(h < height && w < width)) continue;
    if (erasing.random_value) {
      noise->resize(static_cast<size_t>(channels) * h * w);
      FillNormal(rng, noise->data(), noise->size());
    }
    box.erase = true;
    box.height = h;
    box.width = w;
    box.top = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(height - h + 1)));
    box.left = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(width - w + 1)));
    return box;
  }
  return box;
}

void EraseTensor(const Tensor& image, bool chw, const ErasingBox& box, const Transform& erasing,
                 const std::vector<float>& noise, const ErasingNormalization& normalization) {
  if (!box.erase || box.height == 0 || box.width == 0) return;
  const Shape& shape = image.shape();
  if (shape.rank() != 3 || shape[chw ? 0 : 2] != 3) {
    throw Error("RandomErasing: the image must be [3, H, W] or [H, W, 3]");
  }
  const int height = static_cast<int>(chw ? shape[1] : shape[0]);
  const int width = static_cast<int>(chw ? shape[2] : shape[1]);
  if (box.top < 0 || box.left < 0 || box.top + box.height > height ||
      box.left + box.width > width) {
    throw Error("RandomErasing: the box lies outside the image");
  }
  switch (image.dtype()) {
    case DType::kF32:
      Erase(static_cast<float*>(image.raw()), height, width, chw, box, erasing, noise,
            normalization, [](float v) { return v; });
      return;
    case DType::kF16:
      Erase(static_cast<uint16_t*>(image.raw()), height, width, chw, box, erasing, noise,
            normalization, [](float v) { return FloatToHalf(v); });
      return;
    default:
      throw Error(std::string("RandomErasing needs a float image (f32 or f16), got ") +
                  DTypeName(image.dtype()));
  }
}

}  // namespace feedline::vision
