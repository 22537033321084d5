#include "src/vision/write_output.h"

#include <cmath>
#include <cstring>

#include "src/vision/opencv.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define FEEDLINE_HAVE_X86 1
#endif

namespace feedline::vision::internal {
namespace {

template <typename T, typename Lut>
void WriteScalar(const uint8_t* src, int width, int height, bool flip, bool chw, const Lut& lut,
                 T* dst) {
  const size_t plane = static_cast<size_t>(width) * height;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = src + static_cast<size_t>(y) * width * 3;
    if (chw) {
      T* r = dst + static_cast<size_t>(y) * width;
      T* g = r + plane;
      T* b = g + plane;
      for (int x = 0; x < width; ++x) {
        const uint8_t* p = row + 3 * (flip ? width - 1 - x : x);
        r[x] = lut(0, p[0]);
        g[x] = lut(1, p[1]);
        b[x] = lut(2, p[2]);
      }
    } else {
      T* out = dst + static_cast<size_t>(y) * width * 3;
      for (int x = 0; x < width; ++x) {
        const uint8_t* p = row + 3 * (flip ? width - 1 - x : x);
        out[3 * x] = lut(0, p[0]);
        out[3 * x + 1] = lut(1, p[1]);
        out[3 * x + 2] = lut(2, p[2]);
      }
    }
  }
}

#if FEEDLINE_HAVE_X86

// Channels-first float output, eight pixels at a time: two 16-byte loads
// cover the 24 bytes of eight RGB pixels, byte shuffles split them into
// R, G and B, which are widened to float, mapped and stored.
// (Streaming stores, bypassing the cache, measured twice as slow here.)
template <bool kHalf>
__attribute__((target("avx2,fma,f16c"))) void WriteChwAvx2(const uint8_t* src, int width,
                                                           int height, bool flip,
                                                           const ValueMap& map, void* dst) {
  const __m128i r_lo = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r_hi =
      _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_lo = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_lo = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_hi = _mm_setr_epi8(-1, -1, -1, -1, -1, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  const __m256 k255 = _mm256_set1_ps(255.0f);
  __m256 scale[3], bias[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = _mm256_set1_ps(map.scale[c]);
    bias[c] = _mm256_set1_ps(map.bias[c]);
  }
  const size_t plane = static_cast<size_t>(width) * height;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = src + static_cast<size_t>(y) * width * 3;
    const size_t out_row = static_cast<size_t>(y) * width;
    int x = 0;
    for (; x + 8 <= width; x += 8) {
      const uint8_t* p = row + 3 * static_cast<size_t>(flip ? width - 8 - x : x);
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8));
      const __m128i bytes[3] = {
          _mm_or_si128(_mm_shuffle_epi8(lo, r_lo), _mm_shuffle_epi8(hi, r_hi)),
          _mm_or_si128(_mm_shuffle_epi8(lo, g_lo), _mm_shuffle_epi8(hi, g_hi)),
          _mm_or_si128(_mm_shuffle_epi8(lo, b_lo), _mm_shuffle_epi8(hi, b_hi))};
      for (int c = 0; c < 3; ++c) {
        __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes[c]));
        if (flip) v = _mm256_permutevar8x32_ps(v, reverse);
        v = map.divide ? _mm256_div_ps(v, k255) : _mm256_fmadd_ps(v, scale[c], bias[c]);
        const size_t at = c * plane + out_row + x;
        if constexpr (kHalf) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(dst) + at),
                           _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        } else {
          _mm256_storeu_ps(static_cast<float*>(dst) + at, v);
        }
      }
    }
    for (; x < width; ++x) {  // the last width % 8 pixels
      const uint8_t* p = row + 3 * (flip ? width - 1 - x : x);
      for (int c = 0; c < 3; ++c) {
        const size_t at = c * plane + out_row + x;
        if constexpr (kHalf) {
          static_cast<uint16_t*>(dst)[at] = map.f16[c][p[c]];
        } else {
          static_cast<float*>(dst)[at] = map.f32[c][p[c]];
        }
      }
    }
  }
}

bool HasF16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

bool HasAvx2() {
  static const bool has =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
  return has;
}

#else

bool HasAvx2() { return false; }

#endif

}  // namespace

ValueMap MakeValueMap(const std::array<float, 3>* mean, const std::array<float, 3>* std) {
  ValueMap map;
  map.divide = mean == nullptr || std == nullptr;
  for (int c = 0; c < 3; ++c) {
    if (!map.divide) {
      map.scale[c] = static_cast<float>(1.0 / (255.0 * (*std)[c]));
      map.bias[c] = static_cast<float>(-(*mean)[c] / static_cast<double>((*std)[c]));
    }
    for (int v = 0; v < 256; ++v) {
      const float x = static_cast<float>(v);
      const float value = map.divide ? x / 255.0f : std::fmaf(x, map.scale[c], map.bias[c]);
      map.f32[c][v] = value;
      map.f16[c][v] = FloatToHalf(value);
    }
  }
  return map;
}

void WriteOutputScalar(const uint8_t* rgb, int width, int height, bool flip, bool chw, DType dtype,
                       const ValueMap& map, void* dst) {
  switch (dtype) {
    case DType::kF32:
      WriteScalar(
          rgb, width, height, flip, chw, [&map](int c, uint8_t v) { return map.f32[c][v]; },
          static_cast<float*>(dst));
      break;
    case DType::kF16:
      WriteScalar(
          rgb, width, height, flip, chw, [&map](int c, uint8_t v) { return map.f16[c][v]; },
          static_cast<uint16_t*>(dst));
      break;
    default:
      WriteScalar(
          rgb, width, height, flip, chw, [](int, uint8_t v) { return v; },
          static_cast<uint8_t*>(dst));
      break;
  }
}

void WriteOutput(const uint8_t* rgb, int width, int height, bool flip, bool chw, DType dtype,
                 const ValueMap& map, void* dst) {
  if (dtype == DType::kU8) {
    // Bytes stay bytes: OpenCV's vectorized split (or copy), then the flip
    // in place, instead of a lookup per value (a 640 x 640 mosaic's
    // planes cost a millisecond that way).
    const cv::Mat src(height, width, CV_8UC3, const_cast<uint8_t*>(rgb));
    uint8_t* out = static_cast<uint8_t*>(dst);
    if (chw) {
      const size_t plane = static_cast<size_t>(width) * height;
      cv::Mat planes[3] = {cv::Mat(height, width, CV_8UC1, out),
                           cv::Mat(height, width, CV_8UC1, out + plane),
                           cv::Mat(height, width, CV_8UC1, out + 2 * plane)};
      cv::split(src, planes);
      if (flip) {
        for (cv::Mat& p : planes) cv::flip(p, p, /*flipCode=*/1);
      }
    } else {
      cv::Mat image(height, width, CV_8UC3, out);
      if (flip) {
        cv::flip(src, image, /*flipCode=*/1);
      } else {
        src.copyTo(image);
      }
    }
    return;
  }
#if FEEDLINE_HAVE_X86
  if (chw && HasAvx2()) {
    if (dtype == DType::kF32) return WriteChwAvx2<false>(rgb, width, height, flip, map, dst);
    if (dtype == DType::kF16) return WriteChwAvx2<true>(rgb, width, height, flip, map, dst);
  }
#endif
  WriteOutputScalar(rgb, width, height, flip, chw, dtype, map, dst);
}

bool WriteOutputIsVectorized() { return HasAvx2(); }

}  // namespace feedline::vision::internal
