// The color operations of image_ops.h. Each transcribes the float32
// arithmetic of torchvision's functional_tensor.py for uint8 images, one
// rounded float32 operation per torch tensor operation, in the same order,
// ending in the same truncating .to(uint8). Every step is written as its
// own statement so the compiler cannot fuse a multiply and an add (torch
// rounds after each).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <vector>

#include "feedline/vision/image_ops.h"

namespace feedline::vision {
namespace {

// .clamp(0, 255).to(torch.uint8): truncation toward zero.
inline uint8_t ToByte(float v) {
  v = std::min(std::max(v, 0.0f), 255.0f);
  return static_cast<uint8_t>(v);
}

// _blend(img1, img2, ratio) = (ratio * img1 + (1 - ratio) * img2), both
// products and the sum rounded to float32.
struct Blend {
  explicit Blend(double ratio)
      : a(static_cast<float>(ratio)), b(static_cast<float>(1.0 - ratio)) {}
  uint8_t operator()(float x, float y) const {
    const float ax = a * x;
    const float by = b * y;
    return ToByte(ax + by);
  }
  float a, b;
};

// rgb_to_grayscale: (0.2989 r + 0.587 g + 0.114 b).to(uint8).
inline uint8_t Gray(const uint8_t* p) {
  const float r = 0.2989f * static_cast<float>(p[0]);
  const float g = 0.587f * static_cast<float>(p[1]);
  const float b = 0.114f * static_cast<float>(p[2]);
  const float rg = r + g;
  return static_cast<uint8_t>(rg + b);
}

size_t Pixels(const RgbImageView& image) { return static_cast<size_t>(image.height) * image.width; }

}  // namespace

void AdjustBrightness(RgbImageView image, double factor) {
  const Blend blend(factor);
  const size_t n = image.bytes();
  for (size_t i = 0; i < n; ++i) image.data[i] = blend(image.data[i], 0.0f);
}

void AdjustContrast(RgbImageView image, double factor) {
  const size_t n = Pixels(image);
  if (n == 0) return;
  // torch.mean of the grayscale as float32: a float32 sum divided by the
  // count. The sum of integer levels is exact in float32 up to 2^24.
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += Gray(image.data + 3 * i);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  const Blend blend(factor);
  for (size_t i = 0; i < 3 * n; ++i) image.data[i] = blend(image.data[i], mean);
}

void AdjustSaturation(RgbImageView image, double factor) {
  const Blend blend(factor);
  const size_t n = Pixels(image);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* p = image.data + 3 * i;
    const float gray = Gray(p);
    for (int c = 0; c < 3; ++c) p[c] = blend(p[c], gray);
  }
}

void AdjustHue(RgbImageView image, double factor) {
  const float hue_shift = static_cast<float>(factor);
  const size_t n = Pixels(image);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* px = image.data + 3 * i;
    const float r = static_cast<float>(px[0]) / 255.0f;
    const float g = static_cast<float>(px[1]) / 255.0f;
    const float b = static_cast<float>(px[2]) / 255.0f;
    // _rgb2hsv
    const float maxc = std::max(std::max(r, g), b);
    const float minc = std::min(std::min(r, g), b);
    const bool eqc = maxc == minc;
    const float cr = maxc - minc;
    const float s = cr / (eqc ? 1.0f : maxc);
    const float cr_divisor = eqc ? 1.0f : cr;
    const float rc = (maxc - r) / cr_divisor;
    const float gc = (maxc - g) / cr_divisor;
    const float bc = (maxc - b) / cr_divisor;
    const float hr = maxc == r ? bc - gc : 0.0f;
    const float t2 = 2.0f + rc;
    const float hg = (maxc == g && maxc != r) ? t2 - bc : 0.0f;
    const float t4 = 4.0f + gc;
    const float hb = (maxc != g && maxc != r) ? t4 - rc : 0.0f;
    const float hrg = hr + hg;
    float h = hrg + hb;
    const float h6 = h / 6.0f;
    h = std::fmod(h6 + 1.0f, 1.0f);
    const float v = maxc;
    // (h + hue_factor) % 1.0: torch.remainder, a - floor(a / b) * b.
    const float shifted = h + hue_shift;
    h = shifted - std::floor(shifted);
    // _hsv2rgb
    const float hx6 = h * 6.0f;
    const float fi = std::floor(hx6);
    const float f = hx6 - fi;
    int sector = static_cast<int>(fi) % 6;
    if (sector < 0) sector += 6;
    const float one_minus_s = 1.0f - s;
    const float sf = s * f;
    const float one_minus_sf = 1.0f - sf;
    const float one_minus_f = 1.0f - f;
    const float s_one_minus_f = s * one_minus_f;
    const float one_minus_s1f = 1.0f - s_one_minus_f;
    const float p = std::clamp(v * one_minus_s, 0.0f, 1.0f);
    const float q = std::clamp(v * one_minus_sf, 0.0f, 1.0f);
    const float t = std::clamp(v * one_minus_s1f, 0.0f, 1.0f);
    const std::array<float, 6> a1 = {v, q, p, p, t, v};
    const std::array<float, 6> a2 = {t, v, v, q, p, p};
    const std::array<float, 6> a3 = {p, p, t, v, v, q};
    px[0] = ToByte(a1[sector] * 255.0f);
    px[1] = ToByte(a2[sector] * 255.0f);
    px[2] = ToByte(a3[sector] * 255.0f);
  }
}

void AdjustSharpness(RgbImageView image, double factor, std::vector<uint8_t>& scratch) {
  const int h = image.height, w = image.width;
  if (h <= 2 || w <= 2) return;
  // _blurred_degenerate_image: conv2d with the kernel normalized in
  // float32, rounded back to uint8; the border keeps the original pixels.
  const float k1 = 1.0f / 13.0f;
  const float k5 = 5.0f / 13.0f;
  scratch.assign(image.data, image.data + image.bytes());
  const uint8_t* src = scratch.data();
  const Blend blend(factor);
  const size_t stride = static_cast<size_t>(w) * 3;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const bool border = y == 0 || x == 0 || y == h - 1 || x == w - 1;
      for (int c = 0; c < 3; ++c) {
        const uint8_t* center = src + y * stride + x * 3 + c;
        if (border) {
          // The border is blended with itself, which is not always a no-op:
          // 1.9 x - 0.9 x can round to just under x and truncate to x - 1.
          image.data[y * stride + x * 3 + c] = blend(*center, *center);
          continue;
        }
        float sum = 0.0f;
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) {
            const float k = (dy == 0 && dx == 0) ? k5 : k1;
            const float term = k * static_cast<float>(center[dy * static_cast<std::ptrdiff_t>(stride) +
                                                             dx * 3]);
            sum = sum + term;
          }
        }
        const float blurred = std::nearbyint(std::min(std::max(sum, 0.0f), 255.0f));
        image.data[y * stride + x * 3 + c] = blend(static_cast<float>(*center), blurred);
      }
    }
  }
}

void Posterize(RgbImageView image, int bits) {
  const uint8_t mask = static_cast<uint8_t>((0xFF << (8 - bits)) & 0xFF);
  const size_t n = image.bytes();
  for (size_t i = 0; i < n; ++i) image.data[i] &= mask;
}

void Solarize(RgbImageView image, double threshold) {
  const float t = static_cast<float>(threshold);
  const size_t n = image.bytes();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = image.data[i];
    if (static_cast<float>(x) >= t) image.data[i] = static_cast<uint8_t>(255 - x);
  }
}

void AutoContrast(RgbImageView image) {
  const size_t n = Pixels(image);
  if (n == 0) return;
  for (int c = 0; c < 3; ++c) {
    uint8_t lo = 255, hi = 0;
    for (size_t i = 0; i < n; ++i) {
      lo = std::min(lo, image.data[3 * i + c]);
      hi = std::max(hi, image.data[3 * i + c]);
    }
    float minimum = lo;
    float scale = 1.0f;
    if (hi != lo) {
      // bound / tensor is torch's __rtruediv__: reciprocal(), then * bound.
      const float reciprocal = 1.0f / (static_cast<float>(hi) - static_cast<float>(lo));
      scale = reciprocal * 255.0f;
    } else {
      minimum = 0.0f;  // torchvision: a flat channel is left as it is
    }
    for (size_t i = 0; i < n; ++i) {
      uint8_t& x = image.data[3 * i + c];
      const float shifted = static_cast<float>(x) - minimum;
      x = ToByte(shifted * scale);
    }
  }
}

void Equalize(RgbImageView image) {
  const size_t n = Pixels(image);
  for (int c = 0; c < 3; ++c) {
    std::array<int64_t, 256> hist{};
    for (size_t i = 0; i < n; ++i) ++hist[image.data[3 * i + c]];
    // step = (sum of the nonzero bins but the last) // 255
    int last = 255;
    while (last > 0 && hist[last] == 0) --last;
    int64_t below_last = 0;
    for (int v = 0; v < last; ++v) below_last += hist[v];
    const int64_t step = below_last / 255;
    if (step == 0) continue;
    // lut[v] = (cumsum[v - 1] + step // 2) // step, lut[0] = 0, clamped.
    std::array<uint8_t, 256> lut{};
    int64_t cumulative = 0;
    for (int v = 0; v < 256; ++v) {
      lut[v] = v == 0 ? 0 : static_cast<uint8_t>(std::min<int64_t>((cumulative + step / 2) / step, 255));
      cumulative += hist[v];
    }
    for (size_t i = 0; i < n; ++i) image.data[3 * i + c] = lut[image.data[3 * i + c]];
  }
}

void Invert(RgbImageView image) {
  const size_t n = image.bytes();
  for (size_t i = 0; i < n; ++i) image.data[i] = static_cast<uint8_t>(255 - image.data[i]);
}

}  // namespace feedline::vision
