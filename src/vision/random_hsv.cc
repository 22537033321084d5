#include "feedline/vision/random_hsv.h"

#include "src/vision/augment.h"

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

// Whether trunc(x * gain) in float is trunc(x * gain) in double for every
// x in [0, 255]: for most gains it is (the float product's error moves it
// across a whole number only within about 2^-16 of one).
bool FloatScalesExactly(double gain) {
  const auto gain_f = static_cast<float>(gain);
  for (int x = 0; x < 256; ++x) {
    if (static_cast<int32_t>(static_cast<float>(x) * gain_f) != static_cast<int32_t>(x * gain)) {
      return false;
    }
  }
  return true;
}

// trunc(x * gain) of eight int32 lanes in [0, 255]: in float where that
// is exact (kFloat, FloatScalesExactly), else in double.
template <bool kFloat>
__attribute__((target("avx2,fma"))) inline __m256i ScaleTruncated(__m256i x, __m256 gain_f,
                                                                   __m256d gain) {
  if constexpr (kFloat) {
    return _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_cvtepi32_ps(x), gain_f));
  } else {
    const __m128i lo = _mm256_cvttpd_epi32(
        _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(x)), gain));
    const __m128i hi = _mm256_cvttpd_epi32(
        _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1)), gain));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
  }
}

// nearbyint(numerator / x) of eight int32 lanes x in [0, 255] (INT32_MIN
// for x 0), as HsvPixel computes it: cvtps rounds to nearest, halves to
// even, as std::nearbyint. kReciprocal: through the CPU's approximate
// reciprocal and one Newton step (a third of the time of a division here),
// used only where ReciprocalQuotientsExact found it gives every one of the
// 256 quotients the division gives.
template <bool kReciprocal>
__attribute__((target("avx2,fma"))) inline __m256i RoundedQuotient(__m256 numerator, __m256i x) {
  const __m256 xf = _mm256_cvtepi32_ps(x);
  if constexpr (kReciprocal) {
    const __m256 r0 = _mm256_rcp_ps(xf);
    // r1 = r0 (2 - x r0); for x 0, r0 is infinity and r1 NaN: INT32_MIN.
    const __m256 r1 = _mm256_mul_ps(r0, _mm256_fnmadd_ps(xf, r0, _mm256_set1_ps(2.0f)));
    return _mm256_cvtps_epi32(_mm256_mul_ps(numerator, r1));
  } else {
    return _mm256_cvtps_epi32(_mm256_div_ps(numerator, xf));
  }
}

// Whether RoundedQuotient<true> gives RoundedQuotient<false>'s quotients of
// both tables' numerators for every x in [0, 255] on this CPU (the
// approximate reciprocal differs between CPUs).
__attribute__((target("avx2,fma"))) bool ReciprocalQuotientsExact() {
  for (const float numerator : {kSaturationNumerator, kHueNumerator}) {
    const __m256 n = _mm256_set1_ps(numerator);
    for (int x = 0; x < 256; x += 8) {
      const __m256i lanes = _mm256_add_epi32(_mm256_set1_epi32(x), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      const __m256i differ =
          _mm256_xor_si256(RoundedQuotient<true>(n, lanes), RoundedQuotient<false>(n, lanes));
      if (!_mm256_testz_si256(differ, differ)) return false;
    }
  }
  return true;
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

// Stores eight int32 lanes (0-255) as eight bytes.
__attribute__((target("avx2,fma"))) inline void StorePlane(uint8_t* p, __m256i x) {
  const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                             -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1,
                                             -1, -1, -1, -1);
  const __m256i joined =
      _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(x, low_bytes), _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(joined));
}

// The pixels HsvRunAvx2 converts: packed RGB (planes[0], 3 bytes a pixel)
// or three planes (a u8 channels-first output), in place.
struct HsvPixels {
  uint8_t* planes[3];
  bool packed;
};

// Stores eight pixels' channels (int32 lanes, 0-255) at pixel `i`: as
// packed RGB at `p` (the i-th pixel's first byte), or into the three planes.
template <bool kPacked>
__attribute__((target("avx2,fma"))) inline void StorePixels(const HsvPixels& pixels, uint8_t* p,
                                                            int64_t i, __m256i r, __m256i g,
                                                            __m256i b) {
  if constexpr (kPacked) {
    StoreRgb(p, r, g, b);
  } else {
    StorePlane(p, r);
    StorePlane(pixels.planes[1] + i, g);
    StorePlane(pixels.planes[2] + i, b);
  }
}

// Eight pixels a step: the 24 bytes loaded as two 16-byte halves (bytes
// 0-15 and 12-27, so that each 128-bit lane holds four whole pixels),
// split into R, G and B int32 lanes by byte shuffles, converted as
// HsvPixel does (eight greys by a shorter path to the same bytes), and
// joined and stored as 24 bytes. Needs 28 readable
// bytes, so the last pixels go through HsvPixel. From planes (kPacked
// false): eight bytes of each plane widened and stored back the same way.
template <bool kFloat, bool kPacked, bool kReciprocal>
__attribute__((target("avx2,fma"))) void HsvRunAvx2(const HsvPixels& pixels, int64_t n,
                                                    const HsvGains& gains) {
  const __m256i pick_r = _mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1,
                                          -1, 0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1,
                                          -1, -1);
  const __m256i pick_g = _mm256_setr_epi8(1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1,
                                          -1, 1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1,
                                          -1, -1);
  const __m256i pick_b = _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1,
                                          -1, 2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1,
                                          -1, -1);
  const __m256i half = _mm256_set1_epi32(2048);
  const __m256i levels = _mm256_set1_epi32(kHueLevels);
  const __m256i last_level = _mm256_set1_epi32(kHueLevels - 1);
  const __m256i shift = _mm256_set1_epi32((gains.hue_shift + kHueLevels) % kHueLevels);
  const __m256i max_byte = _mm256_set1_epi32(255);
  const __m256d sgain = _mm256_set1_pd(gains.saturation);
  const __m256d vgain = _mm256_set1_pd(gains.value);
  const __m256 sgain_f = _mm256_set1_ps(static_cast<float>(gains.saturation));
  const __m256 vgain_f = _mm256_set1_ps(static_cast<float>(gains.value));
  const __m256 snum = _mm256_set1_ps(kSaturationNumerator);
  const __m256 hnum = _mm256_set1_ps(kHueNumerator);
  const __m256 sixths = _mm256_set1_ps(6.0f / kHueLevels);
  const __m256 inv255 = _mm256_set1_ps(1.0f / 255);
  const __m256 k255 = _mm256_set1_ps(255.0f);
  const __m256 one = _mm256_set1_ps(1.0f);
  // By sector 0-5: red top, falling, bottom, bottom, rising, top; green
  // rising, top, top, falling, bottom, bottom; blue bottom, bottom, rising,
  // top, top, falling (HsvPixel's kPick).
  const __m256 red_m = _mm256_setr_ps(0, 1, 0, 0, -1, 0, 0, 0);
  const __m256 red_c = _mm256_setr_ps(0, 0, 1, 1, 1, 0, 0, 0);
  const __m256 green_m = _mm256_setr_ps(-1, 0, 0, 1, 0, 0, 0, 0);
  const __m256 green_c = _mm256_setr_ps(1, 0, 0, 0, 1, 1, 0, 0);
  const __m256 blue_m = _mm256_setr_ps(0, 0, -1, 0, 0, 1, 0, 0);
  const __m256 blue_c = _mm256_setr_ps(1, 1, 1, 0, 0, 0, 0, 0);
  int64_t i = 0;
  for (; n - i >= (kPacked ? 10 : 8); i += 8) {
    __m256i r, g, b;
    uint8_t* p = pixels.planes[0] + (kPacked ? 3 * i : i);
    if constexpr (kPacked) {
      const __m256i bytes = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<__m128i*>(p))),
          _mm_loadu_si128(reinterpret_cast<__m128i*>(p + 12)), 1);
      r = _mm256_shuffle_epi8(bytes, pick_r);
      g = _mm256_shuffle_epi8(bytes, pick_g);
      b = _mm256_shuffle_epi8(bytes, pick_b);
    } else {
      r = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<__m128i*>(p)));
      g = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<__m128i*>(pixels.planes[1] + i)));
      b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<__m128i*>(pixels.planes[2] + i)));
    }
    const __m256i v = _mm256_max_epi32(r, _mm256_max_epi32(g, b));
    const __m256i diff = _mm256_sub_epi32(v, _mm256_min_epi32(r, _mm256_min_epi32(g, b)));
    if (_mm256_testz_si256(diff, diff)) {
      // Eight greys (a mosaic's fill): saturation 0, so every channel is
      // the scaled value's v2 / 255 * 255, as below.
      const __m256i v2 = _mm256_min_epi32(ScaleTruncated<kFloat>(v, vgain_f, vgain), max_byte);
      const __m256i grey = _mm256_cvttps_epi32(
          _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v2), inv255), k255));
      StorePixels<kPacked>(pixels, p, i, grey, grey, grey);
      continue;
    }
    // A divisor 0 (v 0 or diff 0) gives INT32_MIN, whose product with
    // diff 0 or sector6 0 is 0, as HsvPixel's.
    const __m256i sdiv = RoundedQuotient<kReciprocal>(snum, v);
    const __m256i hdiv = RoundedQuotient<kReciprocal>(hnum, diff);
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
    // The hue in (-30, 150], plus 180 when negative, plus the shift taken
    // modulo 180: in [0, 360), less 180 from 180 up.
    const __m256i rounded = _mm256_add_epi32(_mm256_mullo_epi32(sector6, hdiv), half);
    __m256i h = _mm256_add_epi32(_mm256_srai_epi32(rounded, 12), shift);
    h = _mm256_add_epi32(h, _mm256_and_si256(_mm256_srai_epi32(rounded, 31), levels));
    h = _mm256_sub_epi32(h, _mm256_and_si256(_mm256_cmpgt_epi32(h, last_level), levels));
    const __m256i s2 = _mm256_min_epi32(ScaleTruncated<kFloat>(s, sgain_f, sgain), max_byte);
    const __m256i v2 = _mm256_min_epi32(ScaleTruncated<kFloat>(v, vgain_f, vgain), max_byte);
    const __m256 hf = _mm256_mul_ps(_mm256_cvtepi32_ps(h), sixths);
    const __m256i sector = _mm256_cvttps_epi32(hf);
    const __m256 f = _mm256_sub_ps(hf, _mm256_cvtepi32_ps(sector));
    const __m256 vs = _mm256_mul_ps(_mm256_cvtepi32_ps(v2), inv255);
    const __m256 ss = _mm256_mul_ps(_mm256_cvtepi32_ps(s2), inv255);
    // Each channel's level is vs * (1 - ss * t), t by the sector one of 0
    // (top), 1 (bottom), f (falling) and 1 - f (rising): t = m * f + c,
    // (m, c) looked up by the sector; each product and sum exact or
    // rounded once as the levels' own arithmetic, so the same bytes.
    const __m256 t_r = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(red_m, sector), f,
                                       _mm256_permutevar8x32_ps(red_c, sector));
    const __m256 t_g = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(green_m, sector), f,
                                       _mm256_permutevar8x32_ps(green_c, sector));
    const __m256 t_b = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(blue_m, sector), f,
                                       _mm256_permutevar8x32_ps(blue_c, sector));
    const __m256 out_r = _mm256_mul_ps(vs, _mm256_fnmadd_ps(ss, t_r, one));
    const __m256 out_g = _mm256_mul_ps(vs, _mm256_fnmadd_ps(ss, t_g, one));
    const __m256 out_b = _mm256_mul_ps(vs, _mm256_fnmadd_ps(ss, t_b, one));
    const __m256i red = _mm256_cvttps_epi32(_mm256_mul_ps(out_r, k255));
    const __m256i green = _mm256_cvttps_epi32(_mm256_mul_ps(out_g, k255));
    const __m256i blue = _mm256_cvttps_epi32(_mm256_mul_ps(out_b, k255));
    StorePixels<kPacked>(pixels, p, i, red, green, blue);
  }
  for (; i < n; ++i) {
    if constexpr (kPacked) {
      HsvPixel(pixels.planes[0] + 3 * i, gains);
    } else {
      uint8_t rgb[3] = {pixels.planes[0][i], pixels.planes[1][i], pixels.planes[2][i]};
      HsvPixel(rgb, gains);
      for (int c = 0; c < 3; ++c) pixels.planes[c][i] = rgb[c];
    }
  }
}

// HsvRunAvx2 for the pixels' layout and whether the gains scale exactly
// in float.
template <bool kReciprocal>
void RunAvx2(const HsvPixels& pixels, int64_t n, const HsvGains& gains, bool float_exact) {
  if (pixels.packed) {
    float_exact ? HsvRunAvx2<true, true, kReciprocal>(pixels, n, gains)
                : HsvRunAvx2<false, true, kReciprocal>(pixels, n, gains);
  } else {
    float_exact ? HsvRunAvx2<true, false, kReciprocal>(pixels, n, gains)
                : HsvRunAvx2<false, false, kReciprocal>(pixels, n, gains);
  }
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

namespace {

// The factors as HsvGains, and whether any differs from 1.
bool ToGains(const RandomHsvParams& params, HsvGains& gains) {
  const std::array<double, 3>& r = params.factors;
  if (r[0] == 1 && r[1] == 1 && r[2] == 1) return false;
  // Ultralytics' hue table is (x + gain * u * 180) % 180, truncated: for a
  // whole x that is x + floor(gain * u * 180), modulo 180. The factor is
  // 1 + gain * u, and factor - 1 can be an ulp under gain * u: a shift
  // within 1e-9 under a whole level is taken as that level.
  gains.hue_shift = std::clamp(static_cast<int>(std::floor((r[0] - 1) * kHueLevels + 1e-9)),
                               -kHueLevels, kHueLevels);
  gains.saturation = std::max(r[1], 0.0);
  gains.value = std::max(r[2], 0.0);
  return true;
}

void ApplyHsv(const HsvPixels& pixels, int64_t n, const HsvGains& gains) {
#if FEEDLINE_HAVE_X86
  if (HasAvx2()) {
    static const bool reciprocal = ReciprocalQuotientsExact();
    const bool exact = FloatScalesExactly(gains.saturation) && FloatScalesExactly(gains.value);
    if (reciprocal) {
      RunAvx2<true>(pixels, n, gains, exact);
    } else {
      RunAvx2<false>(pixels, n, gains, exact);
    }
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) {
    if (pixels.packed) {
      HsvPixel(pixels.planes[0] + 3 * i, gains);
    } else {
      uint8_t rgb[3] = {pixels.planes[0][i], pixels.planes[1][i], pixels.planes[2][i]};
      HsvPixel(rgb, gains);
      for (int c = 0; c < 3; ++c) pixels.planes[c][i] = rgb[c];
    }
  }
}

}  // namespace

void ApplyRandomHsv(RgbImageView image, const RandomHsvParams& params) {
  HsvGains gains;
  if (!ToGains(params, gains)) return;
  // Rows have no padding: the image is one run of pixels.
  ApplyHsv(HsvPixels{{image.data, nullptr, nullptr}, true},
           static_cast<int64_t>(image.width) * image.height, gains);
}

namespace internal {

void ApplyRandomHsvPlanes(uint8_t* red, uint8_t* green, uint8_t* blue, int64_t pixels,
                          const RandomHsvParams& params) {
  HsvGains gains;
  if (!ToGains(params, gains)) return;
  ApplyHsv(HsvPixels{{red, green, blue}, false}, pixels, gains);
}

}  // namespace internal

}  // namespace feedline::vision
