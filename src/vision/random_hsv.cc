#include "feedline/vision/random_hsv.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FEEDLINE_HAVE_X86 1
#endif

namespace feedline::vision {
namespace {

// OpenCV's 8-bit hue wraps at 180 (two degrees a level).
constexpr int kHueLevels = 180;
// OpenCV's fixed-point tables: round(255 * 2^12 / v) and
// round(180 * 2^12 / (6 diff)), rounded back by 2^12.
constexpr float kSaturationNumerator = 255 << 12;
constexpr float kHueNumerator = (180 << 12) / 6;

// The factors as the pixel loops take them.
struct HsvGains {
  int hue_shift;  // whole levels added to the 8-bit hue, in [-180, 180]
  double saturation;
  double value;
};

// One pixel, in place; the vector loop below computes exactly this, lane
// by lane. RGB -> OpenCV's 8-bit H, S, V (its integer arithmetic, the
// tables' quotients computed in float, where they are exact: their
// rounding error is far below their distance from a half, and none is a
// half); the lookup tables (H + shift modulo 180, S and V times their
// factors in double as the tables are computed, clipped and truncated);
// back by OpenCV's vectorized HSV2RGB as its AVX2 build computes it: the
// hexcone in float on s / 255 and v / 255 (1 - s * x fused, one rounding),
// times 255, truncated. (std::fma is a library call on an x86 CPU without
// FMA, where every pixel takes this path: slower there, but the same bytes.)
inline void HsvPixel(uint8_t* p, const HsvGains& gains) {
  const int32_t r = p[0], g = p[1], b = p[2];
  const int32_t v = std::max(r, std::max(g, b));
  const int32_t diff = v - std::min(r, std::min(g, b));
  const auto sdiv = static_cast<int32_t>(
      std::nearbyint(kSaturationNumerator / static_cast<float>(std::max(v, 1))));
  const auto hdiv =
      static_cast<int32_t>(std::nearbyint(kHueNumerator / static_cast<float>(std::max(diff, 1))));
  const int32_t s = (diff * sdiv + 2048) >> 12;
  const int32_t sector6 = v == r ? g - b : v == g ? b - r + 2 * diff : r - g + 4 * diff;
  int32_t h = (sector6 * hdiv + 2048) >> 12;
  if (h < 0) h += kHueLevels;
  h += gains.hue_shift;
  if (h < 0) h += kHueLevels;
  if (h >= kHueLevels) h -= kHueLevels;
  const int32_t s2 = std::min(static_cast<int32_t>(s * gains.saturation), 255);
  const int32_t v2 = std::min(static_cast<int32_t>(v * gains.value), 255);
  const float hf = static_cast<float>(h) * (6.0f / kHueLevels);
  const auto sector = static_cast<int32_t>(hf);
  const float f = hf - static_cast<float>(sector);
  const float vs = static_cast<float>(v2) * (1.0f / 255);
  const float ss = static_cast<float>(s2) * (1.0f / 255);
  // The hexcone's four levels; each channel takes one by the sector.
  const float top = vs;
  const float bottom = vs * (1.0f - ss);
  const float falling = vs * std::fma(-ss, f, 1.0f);
  const float rising = vs * std::fma(-ss, 1.0f - f, 1.0f);
  static constexpr uint8_t kPick[6][3] = {{0, 3, 1}, {2, 0, 1}, {1, 0, 3},
                                          {1, 2, 0}, {3, 1, 0}, {0, 1, 2}};
  const float levels[4] = {top, bottom, falling, rising};
  for (int c = 0; c < 3; ++c) {
    p[c] = static_cast<uint8_t>(static_cast<int32_t>(levels[kPick[sector][c]] * 255.0f));
  }
}

#if FEEDLINE_HAVE_X86

// trunc(x * gain) of eight int32 lanes, the product in double.
__attribute__((target("avx2,fma"))) inline __m256i ScaleTruncated(__m256i x, __m256d gain) {
  const __m128i lo = _mm256_cvttpd_epi32(
      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(x)), gain));
  const __m128i hi = _mm256_cvttpd_epi32(
      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1)), gain));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

// Stores eight pixels' channels (int32 lanes, 0-255) as 24 RGB bytes.
__attribute__((target("avx2,fma"))) inline void StoreRgb(uint8_t* p, __m256i r, __m256i g,
                                                         __m256i b) {
  // Each 128-bit lane's four pixels R | G << 8 | B << 16 packed to 12
  // bytes, and the two lanes' 12 bytes made contiguous.
  const __m256i pack = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1, 0,
                                        1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i join = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
  const __m256i rgb = _mm256_or_si256(
      r, _mm256_or_si256(_mm256_slli_epi32(g, 8), _mm256_slli_epi32(b, 16)));
  const __m256i joined = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(rgb, pack), join);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(joined));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), _mm256_extracti128_si256(joined, 1));
}

// Eight pixels a step: the 24 bytes loaded as two 16-byte halves (bytes
// 0-15 and 12-27, so that each 128-bit lane holds four whole pixels),
// split into R, G and B int32 lanes by byte shuffles, converted as
// HsvPixel does (eight greys by a shorter path to the same bytes), and
// joined and stored as 24 bytes. Needs 28 readable
// bytes, so the last pixels go through HsvPixel.
__attribute__((target("avx2,fma"))) void HsvRunAvx2(uint8_t* p, int64_t n, const HsvGains& gains) {
  const __m256i pick_r = _mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1,
                                          -1, 0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1,
                                          -1, -1);
  const __m256i pick_g = _mm256_setr_epi8(1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1,
                                          -1, 1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1,
                                          -1, -1);
  const __m256i pick_b = _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1,
                                          -1, 2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1,
                                          -1, -1);
  const __m256i zero = _mm256_setzero_si256();
  const __m256i half = _mm256_set1_epi32(2048);
  const __m256i levels = _mm256_set1_epi32(kHueLevels);
  const __m256i last_level = _mm256_set1_epi32(kHueLevels - 1);
  const __m256i shift = _mm256_set1_epi32(gains.hue_shift);
  const __m256i max_byte = _mm256_set1_epi32(255);
  const __m256d sgain = _mm256_set1_pd(gains.saturation);
  const __m256d vgain = _mm256_set1_pd(gains.value);
  const __m256 snum = _mm256_set1_ps(kSaturationNumerator);
  const __m256 hnum = _mm256_set1_ps(kHueNumerator);
  const __m256 sixths = _mm256_set1_ps(6.0f / kHueLevels);
  const __m256 inv255 = _mm256_set1_ps(1.0f / 255);
  const __m256 k255 = _mm256_set1_ps(255.0f);
  const __m256 one = _mm256_set1_ps(1.0f);
  for (; n >= 10; n -= 8, p += 24) {
    const __m256i bytes =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<__m128i*>(p))),
                                _mm_loadu_si128(reinterpret_cast<__m128i*>(p + 12)), 1);
    const __m256i r = _mm256_shuffle_epi8(bytes, pick_r);
    const __m256i g = _mm256_shuffle_epi8(bytes, pick_g);
    const __m256i b = _mm256_shuffle_epi8(bytes, pick_b);
    const __m256i v = _mm256_max_epi32(r, _mm256_max_epi32(g, b));
    const __m256i diff = _mm256_sub_epi32(v, _mm256_min_epi32(r, _mm256_min_epi32(g, b)));
    if (_mm256_testz_si256(diff, diff)) {
      // Eight greys (a mosaic's fill): saturation 0, so every channel is
      // the scaled value's v2 / 255 * 255, as below.
      const __m256i v2 = _mm256_min_epi32(ScaleTruncated(v, vgain), max_byte);
      const __m256i grey = _mm256_cvttps_epi32(
          _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v2), inv255), k255));
      StoreRgb(p, grey, grey, grey);
      continue;
    }
    // max(x, 1) for x >= 0: x - (x == 0).
    const __m256 v1 = _mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_cmpeq_epi32(v, zero)));
    const __m256 d1 = _mm256_cvtepi32_ps(_mm256_sub_epi32(diff, _mm256_cmpeq_epi32(diff, zero)));
    // cvtps rounds to nearest, halves to even, as std::nearbyint.
    const __m256i sdiv = _mm256_cvtps_epi32(_mm256_div_ps(snum, v1));
    const __m256i hdiv = _mm256_cvtps_epi32(_mm256_div_ps(hnum, d1));
    const __m256i s =
        _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(diff, sdiv), half), 12);
    const __m256i is_r = _mm256_cmpeq_epi32(v, r);
    const __m256i is_g = _mm256_cmpeq_epi32(v, g);
    const __m256i diff2 = _mm256_add_epi32(diff, diff);
    const __m256i from_r = _mm256_sub_epi32(g, b);
    const __m256i from_g = _mm256_add_epi32(_mm256_sub_epi32(b, r), diff2);
    const __m256i from_b = _mm256_add_epi32(_mm256_sub_epi32(r, g), _mm256_add_epi32(diff2, diff2));
    const __m256i sector6 =
        _mm256_blendv_epi8(_mm256_blendv_epi8(from_b, from_g, is_g), from_r, is_r);
    __m256i h = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(sector6, hdiv), half), 12);
    h = _mm256_add_epi32(h, _mm256_and_si256(_mm256_srai_epi32(h, 31), levels));
    h = _mm256_add_epi32(h, shift);
    h = _mm256_add_epi32(h, _mm256_and_si256(_mm256_srai_epi32(h, 31), levels));
    h = _mm256_sub_epi32(h, _mm256_and_si256(_mm256_cmpgt_epi32(h, last_level), levels));
    const __m256i s2 = _mm256_min_epi32(ScaleTruncated(s, sgain), max_byte);
    const __m256i v2 = _mm256_min_epi32(ScaleTruncated(v, vgain), max_byte);
    const __m256 hf = _mm256_mul_ps(_mm256_cvtepi32_ps(h), sixths);
    const __m256i sector = _mm256_cvttps_epi32(hf);
    const __m256 f = _mm256_sub_ps(hf, _mm256_cvtepi32_ps(sector));
    const __m256 vs = _mm256_mul_ps(_mm256_cvtepi32_ps(v2), inv255);
    const __m256 ss = _mm256_mul_ps(_mm256_cvtepi32_ps(s2), inv255);
    const __m256 top = vs;
    const __m256 bottom = _mm256_mul_ps(vs, _mm256_sub_ps(one, ss));
    const __m256 falling = _mm256_mul_ps(vs, _mm256_fnmadd_ps(ss, f, one));
    const __m256 rising = _mm256_mul_ps(vs, _mm256_fnmadd_ps(ss, _mm256_sub_ps(one, f), one));
    // sector == k
    const __m256 in0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sector, zero));
    const __m256 in1 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sector, _mm256_set1_epi32(1)));
    const __m256 in2 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sector, _mm256_set1_epi32(2)));
    const __m256 in3 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sector, _mm256_set1_epi32(3)));
    const __m256 in4 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sector, _mm256_set1_epi32(4)));
    const __m256 in5 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(sector, _mm256_set1_epi32(5)));
    // Red: top, falling, bottom, bottom, rising, top.
    __m256 out_r = _mm256_blendv_ps(top, falling, in1);
    out_r = _mm256_blendv_ps(out_r, bottom, _mm256_or_ps(in2, in3));
    out_r = _mm256_blendv_ps(out_r, rising, in4);
    // Green: rising, top, top, falling, bottom, bottom.
    __m256 out_g = _mm256_blendv_ps(bottom, rising, in0);
    out_g = _mm256_blendv_ps(out_g, top, _mm256_or_ps(in1, in2));
    out_g = _mm256_blendv_ps(out_g, falling, in3);
    // Blue: bottom, bottom, rising, top, top, falling.
    __m256 out_b = _mm256_blendv_ps(top, bottom, _mm256_or_ps(in0, in1));
    out_b = _mm256_blendv_ps(out_b, rising, in2);
    out_b = _mm256_blendv_ps(out_b, falling, in5);
    StoreRgb(p, _mm256_cvttps_epi32(_mm256_mul_ps(out_r, k255)),
             _mm256_cvttps_epi32(_mm256_mul_ps(out_g, k255)),
             _mm256_cvttps_epi32(_mm256_mul_ps(out_b, k255)));
  }
  for (; n > 0; --n, p += 3) HsvPixel(p, gains);
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

#endif

}  // namespace

RandomHsvParams DrawRandomHsv(const Transform& hsv, Rng& rng) {
  RandomHsvParams params;
  // The gains are kept as the ranges [-gain, gain].
  const std::array<double, 3> gains = {hsv.hue[1], hsv.saturation[1], hsv.brightness[1]};
  if (gains[0] == 0 && gains[1] == 0 && gains[2] == 0) return params;
  for (int c = 0; c < 3; ++c) params.factors[c] = 1 + gains[c] * rng.Uniform(-1, 1);
  return params;
}

void ApplyRandomHsv(RgbImageView image, const RandomHsvParams& params) {
  const std::array<double, 3>& r = params.factors;
  if (r[0] == 1 && r[1] == 1 && r[2] == 1) return;
  // Ultralytics' hue table is (x + gain * u * 180) % 180, truncated: for a
  // whole x that is x + floor(gain * u * 180), modulo 180. The factor is
  // 1 + gain * u, and factor - 1 can be an ulp under gain * u: a shift
  // within 1e-9 under a whole level is taken as that level.
  HsvGains gains;
  gains.hue_shift = std::clamp(static_cast<int>(std::floor((r[0] - 1) * kHueLevels + 1e-9)),
                               -kHueLevels, kHueLevels);
  gains.saturation = std::max(r[1], 0.0);
  gains.value = std::max(r[2], 0.0);
  // Rows have no padding: the image is one run of pixels.
  const int64_t pixels = static_cast<int64_t>(image.width) * image.height;
  uint8_t* p = image.data;
#if FEEDLINE_HAVE_X86
  if (HasAvx2()) {
    HsvRunAvx2(p, pixels, gains);
    return;
  }
#endif
  for (int64_t i = 0; i < pixels; ++i, p += 3) HsvPixel(p, gains);
}

}  // namespace feedline::vision
