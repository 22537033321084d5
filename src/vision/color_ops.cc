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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// The result of blend(x, other) for each level x: one table lookup per
// value where `other` is the same for the whole image.
std::array<uint8_t, 256> BlendTable(const Blend& blend, float other) {
  std::array<uint8_t, 256> table;
  for (int x = 0; x < 256; ++x) table[x] = blend(static_cast<float>(x), other);
  return table;
}

}  // namespace

void AdjustBrightness(RgbImageView image, double factor) {
  const std::array<uint8_t, 256> table = BlendTable(Blend(factor), 0.0f);
  const size_t n = image.bytes();
  for (size_t i = 0; i < n; ++i) image.data[i] = table[image.data[i]];
}

void AdjustContrast(RgbImageView image, double factor) {
  const size_t n = Pixels(image);
  if (n == 0) return;
  // torch.mean of the grayscale as float32: a float32 sum divided by the
  // count. The sum of integer levels is exact in float32 up to 2^24.
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += Gray(image.data + 3 * i);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  const std::array<uint8_t, 256> table = BlendTable(Blend(factor), mean);
  for (size_t i = 0; i < 3 * n; ++i) image.data[i] = table[image.data[i]];
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

namespace {

// Pixels per block of AdjustHue: the block's planes live on the stack.
constexpr int kHueBlock = 256;

// adjust_hue on n <= kHueBlock pixels held as planes of x / 255. Written
// without branches or library calls so the compiler vectorizes it; each
// float operation is torch's, in its order (the identities used are exact:
// fmod(x, 1) for x in [0, 2) is x - 1 or x, torch.remainder(x, 1) for x in
// [-0.5, 1.5) is x + 1, x - 1 or x, floor of a non-negative x is its
// truncation).
// Pixels [first, n) one at a time: the reference the SSE2 path follows
// operation for operation, and the tail of each block.
void HueScalar(float* r_plane, float* g_plane, float* b_plane, int first, int n, float hue_shift) {
  for (int i = first; i < n; ++i) {
    const float r = r_plane[i], g = g_plane[i], b = b_plane[i];
    // _rgb2hsv
    const float maxc = std::max(std::max(r, g), b);
    const float minc = std::min(std::min(r, g), b);
    const bool eqc = maxc == minc;
    const float cr = maxc - minc;
    const float s_divisor = eqc ? 1.0f : maxc;
    const float s = cr / s_divisor;
    const float cr_divisor = eqc ? 1.0f : cr;
    const float rc = (maxc - r) / cr_divisor;
    const float gc = (maxc - g) / cr_divisor;
    const float bc = (maxc - b) / cr_divisor;
    const float hr_value = bc - gc;
    const float t2 = 2.0f + rc;
    const float hg_value = t2 - bc;
    const float t4 = 4.0f + gc;
    const float hb_value = t4 - rc;
    const bool is_r = maxc == r;
    const bool is_g = maxc == g;
    const float hr = is_r ? hr_value : 0.0f;
    const float hg = (is_g & !is_r) ? hg_value : 0.0f;
    const float hb = (!is_g & !is_r) ? hb_value : 0.0f;
    const float hrg = hr + hg;
    const float h_sum = hrg + hb;
    const float h6 = h_sum / 6.0f;
    const float wrapped = h6 + 1.0f;  // in [5/6, 11/6]
    const float wrapped_down = wrapped - 1.0f;
    const float h = wrapped >= 1.0f ? wrapped_down : wrapped;
    const float v = maxc;
    // (h + hue_factor) % 1.0
    const float shifted = h + hue_shift;  // in [-0.5, 1.5)
    const float shifted_up = shifted + 1.0f;
    const float shifted_down = shifted - 1.0f;
    const bool below = shifted < 0.0f;
    const bool above = shifted >= 1.0f;
    float hue = above ? shifted_down : shifted;
    hue = below ? shifted_up : hue;
    // _hsv2rgb
    const float hx6 = hue * 6.0f;
    const int whole = static_cast<int>(hx6);  // floor: hx6 >= 0
    const float f = hx6 - static_cast<float>(whole);
    const int sector = whole == 6 ? 0 : whole;
    const float one_minus_s = 1.0f - s;
    const float sf = s * f;
    const float one_minus_sf = 1.0f - sf;
    const float one_minus_f = 1.0f - f;
    const float s_one_minus_f = s * one_minus_f;
    const float one_minus_s1f = 1.0f - s_one_minus_f;
    const float p = std::min(std::max(v * one_minus_s, 0.0f), 1.0f);
    const float q = std::min(std::max(v * one_minus_sf, 0.0f), 1.0f);
    const float t = std::min(std::max(v * one_minus_s1f, 0.0f), 1.0f);
    // sector:  0  1  2  3  4  5
    //   r      v  q  p  p  t  v
    //   g      t  v  v  q  p  p
    //   b      p  p  t  v  v  q
    const bool s0 = sector == 0, s1 = sector == 1, s2 = sector == 2;
    const bool s3 = sector == 3, s4 = sector == 4, s5 = sector == 5;
    float r_out = s1 ? q : p;
    r_out = s4 ? t : r_out;
    r_out = (s0 | s5) ? v : r_out;
    float g_out = s0 ? t : p;
    g_out = s3 ? q : g_out;
    g_out = (s1 | s2) ? v : g_out;
    float b_out = s2 ? t : p;
    b_out = s5 ? q : b_out;
    b_out = (s3 | s4) ? v : b_out;
    r_plane[i] = r_out;
    g_plane[i] = g_out;
    b_plane[i] = b_out;
  }
}

#if defined(__SSE2__)
// HueScalar four pixels at a time with SSE2 (every x86-64 CPU has it): the
// same IEEE float32 operations in the same order, branches as selects.
// Returns how many pixels it did (a multiple of 4).
int HueSse2(float* r_plane, float* g_plane, float* b_plane, int n, float hue_shift) {
  const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f), two = _mm_set1_ps(2.0f);
  const __m128 four = _mm_set1_ps(4.0f), six = _mm_set1_ps(6.0f), shift = _mm_set1_ps(hue_shift);
  auto select = [](__m128 mask, __m128 a, __m128 b) {
    return _mm_or_ps(_mm_and_ps(mask, a), _mm_andnot_ps(mask, b));
  };
  auto sector_is = [](__m128i sector, int k) {
    return _mm_castsi128_ps(_mm_cmpeq_epi32(sector, _mm_set1_epi32(k)));
  };
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 r = _mm_loadu_ps(r_plane + i);
    const __m128 g = _mm_loadu_ps(g_plane + i);
    const __m128 b = _mm_loadu_ps(b_plane + i);
    const __m128 maxc = _mm_max_ps(_mm_max_ps(r, g), b);
    const __m128 minc = _mm_min_ps(_mm_min_ps(r, g), b);
    const __m128 eqc = _mm_cmpeq_ps(maxc, minc);
    const __m128 cr = _mm_sub_ps(maxc, minc);
    const __m128 s = _mm_div_ps(cr, select(eqc, one, maxc));
    const __m128 cr_divisor = select(eqc, one, cr);
    const __m128 rc = _mm_div_ps(_mm_sub_ps(maxc, r), cr_divisor);
    const __m128 gc = _mm_div_ps(_mm_sub_ps(maxc, g), cr_divisor);
    const __m128 bc = _mm_div_ps(_mm_sub_ps(maxc, b), cr_divisor);
    const __m128 is_r = _mm_cmpeq_ps(maxc, r);
    const __m128 is_g = _mm_cmpeq_ps(maxc, g);
    const __m128 hr = _mm_and_ps(is_r, _mm_sub_ps(bc, gc));
    const __m128 hg = _mm_and_ps(_mm_andnot_ps(is_r, is_g), _mm_sub_ps(_mm_add_ps(two, rc), bc));
    const __m128 hb = _mm_andnot_ps(_mm_or_ps(is_g, is_r), _mm_sub_ps(_mm_add_ps(four, gc), rc));
    const __m128 h_sum = _mm_add_ps(_mm_add_ps(hr, hg), hb);
    const __m128 wrapped = _mm_add_ps(_mm_div_ps(h_sum, six), one);
    const __m128 h = select(_mm_cmpge_ps(wrapped, one), _mm_sub_ps(wrapped, one), wrapped);
    const __m128 shifted = _mm_add_ps(h, shift);
    __m128 hue = select(_mm_cmpge_ps(shifted, one), _mm_sub_ps(shifted, one), shifted);
    hue = select(_mm_cmplt_ps(shifted, zero), _mm_add_ps(shifted, one), hue);
    const __m128 hx6 = _mm_mul_ps(hue, six);
    const __m128i whole = _mm_cvttps_epi32(hx6);
    const __m128 f = _mm_sub_ps(hx6, _mm_cvtepi32_ps(whole));
    const __m128i sector = _mm_andnot_si128(_mm_cmpeq_epi32(whole, _mm_set1_epi32(6)), whole);
    const __m128 v = maxc;
    const __m128 one_minus_s = _mm_sub_ps(one, s);
    const __m128 one_minus_sf = _mm_sub_ps(one, _mm_mul_ps(s, f));
    const __m128 one_minus_s1f = _mm_sub_ps(one, _mm_mul_ps(s, _mm_sub_ps(one, f)));
    const __m128 p = _mm_min_ps(_mm_max_ps(_mm_mul_ps(v, one_minus_s), zero), one);
    const __m128 q = _mm_min_ps(_mm_max_ps(_mm_mul_ps(v, one_minus_sf), zero), one);
    const __m128 t = _mm_min_ps(_mm_max_ps(_mm_mul_ps(v, one_minus_s1f), zero), one);
    const __m128 s0 = sector_is(sector, 0), s1 = sector_is(sector, 1), s2 = sector_is(sector, 2);
    const __m128 s3 = sector_is(sector, 3), s4 = sector_is(sector, 4), s5 = sector_is(sector, 5);
    __m128 r_out = select(s1, q, p);
    r_out = select(s4, t, r_out);
    r_out = select(_mm_or_ps(s0, s5), v, r_out);
    __m128 g_out = select(s0, t, p);
    g_out = select(s3, q, g_out);
    g_out = select(_mm_or_ps(s1, s2), v, g_out);
    __m128 b_out = select(s2, t, p);
    b_out = select(s5, q, b_out);
    b_out = select(_mm_or_ps(s3, s4), v, b_out);
    _mm_storeu_ps(r_plane + i, r_out);
    _mm_storeu_ps(g_plane + i, g_out);
    _mm_storeu_ps(b_plane + i, b_out);
  }
  return i;
}
#endif

void HueBlock(float* r_plane, float* g_plane, float* b_plane, int n, float hue_shift) {
  int done = 0;
#if defined(__SSE2__)
  done = HueSse2(r_plane, g_plane, b_plane, n, hue_shift);
#endif
  HueScalar(r_plane, g_plane, b_plane, done, n, hue_shift);
}

}  // namespace

void AdjustHue(RgbImageView image, double factor) {
  const float hue_shift = static_cast<float>(factor);
  const size_t n = Pixels(image);
  // x / 255 in float32 for each level: a table instead of a division per value.
  static const std::array<float, 256> kUnit = [] {
    std::array<float, 256> unit;
    for (int v = 0; v < 256; ++v) unit[v] = static_cast<float>(v) / 255.0f;
    return unit;
  }();
  float r[kHueBlock], g[kHueBlock], b[kHueBlock];
  for (size_t start = 0; start < n; start += kHueBlock) {
    const int count = static_cast<int>(std::min<size_t>(kHueBlock, n - start));
    uint8_t* px = image.data + 3 * start;
    for (int i = 0; i < count; ++i) {
      r[i] = kUnit[px[3 * i]];
      g[i] = kUnit[px[3 * i + 1]];
      b[i] = kUnit[px[3 * i + 2]];
    }
    HueBlock(r, g, b, count, hue_shift);
    for (int i = 0; i < count; ++i) {
      px[3 * i] = ToByte(r[i] * 255.0f);
      px[3 * i + 1] = ToByte(g[i] * 255.0f);
      px[3 * i + 2] = ToByte(b[i] * 255.0f);
    }
  }
}

void AdjustSharpness(RgbImageView image, double factor, std::vector<uint8_t>& scratch) {
  const int h = image.height, w = image.width;
  if (h <= 2 || w <= 2) return;
  // _blurred_degenerate_image: conv2d with [[1,1,1],[1,5,1],[1,1,1]] / 13,
  // rounded to uint8; the border keeps the original pixels. The exact value
  // is S / 13 for an integer S, never within 1/26 of a half, so torch's
  // float32 sum (in whatever order) rounds to round(S / 13), computed here
  // in integers.
  scratch.assign(image.data, image.data + image.bytes());
  const uint8_t* src = scratch.data();
  const Blend blend(factor);
  const ptrdiff_t stride = static_cast<ptrdiff_t>(w) * 3;
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = src + y * stride;
    uint8_t* out = image.data + y * stride;
    if (y == 0 || y == h - 1) {
      // The border is blended with itself, which is not always a no-op:
      // 1.9 x - 0.9 x can round to just under x and truncate to x - 1.
      for (ptrdiff_t j = 0; j < stride; ++j) out[j] = blend(row[j], row[j]);
      continue;
    }
    for (int j = 0; j < 3; ++j) {
      out[j] = blend(row[j], row[j]);
      out[stride - 3 + j] = blend(row[stride - 3 + j], row[stride - 3 + j]);
    }
    const uint8_t* up = row - stride;
    const uint8_t* down = row + stride;
    for (ptrdiff_t j = 3; j < stride - 3; ++j) {
      const int sum = up[j - 3] + up[j] + up[j + 3] + row[j - 3] + 5 * row[j] + row[j + 3] +
                      down[j - 3] + down[j] + down[j + 3];
      const int blurred = (2 * sum + 13) / 26;
      out[j] = blend(static_cast<float>(row[j]), static_cast<float>(blurred));
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
