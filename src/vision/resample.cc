#include "src/vision/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "src/vision/opencv.h"

#include "src/vision/scratch_arena.h"

// The filter loops are simple float arithmetic that GCC vectorizes only
// above -O2.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize")
#endif

// Function versions for AVX2 and the baseline, picked at load time (GCC on
// x86-64 with ifunc support); elsewhere one version. Not under
// ThreadSanitizer: the ifunc resolver runs during relocation, before the
// TSan runtime it is instrumented to call exists, and the program crashes
// at load.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_THREAD__)
#define FEEDLINE_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FEEDLINE_VECTOR_CLONES
#endif

namespace feedline::vision::internal {
namespace {

// Box coordinates closer than this to an integer are taken as that integer
// (they come from divisions by powers of two and products of ratios).
constexpr double kEpsilon = 1e-6;

bool IsWhole(double v) { return std::abs(v - std::nearbyint(v)) < kEpsilon; }

int CvFlag(Filter filter) {
  switch (filter) {
    case Filter::kLinear:
      return cv::INTER_LINEAR;
    case Filter::kArea:
      return cv::INTER_AREA;
    case Filter::kNearest:
      return cv::INTER_NEAREST_EXACT;
  }
  return cv::INTER_LINEAR;
}

int TapsPerOutput(Filter filter, double scale) {
  switch (filter) {
    case Filter::kNearest:
      return 1;
    case Filter::kLinear:
      return 2;
    case Filter::kArea:
      return static_cast<int>(std::ceil(scale - kEpsilon)) + 1;
  }
  return 2;
}

// One axis of a separable filter: output o reads source pixels
// index[o * taps + k] with weight[o * taps + k]. Indices are clamped to the
// pixels the box touches (as cv::resize does at the edges of an ROI).
void MakeTaps(Filter filter, double start, double length, int outputs, int first_pixel,
              int last_pixel, int taps, int* index, float* weight) {
  const double scale = length / outputs;
  for (int o = 0; o < outputs; ++o) {
    int* ix = index + static_cast<size_t>(o) * taps;
    float* wt = weight + static_cast<size_t>(o) * taps;
    std::fill(ix, ix + taps, first_pixel);
    std::fill(wt, wt + taps, 0.0f);
    switch (filter) {
      case Filter::kNearest: {
        const int i = static_cast<int>(std::floor(start + (o + 0.5) * scale));
        ix[0] = std::clamp(i, first_pixel, last_pixel);
        wt[0] = 1.0f;
        break;
      }
      case Filter::kLinear: {
        const double centre = start + (o + 0.5) * scale - 0.5;
        const double floor = std::floor(centre);
        const float a = static_cast<float>(centre - floor);
        const int i = static_cast<int>(floor);
        ix[0] = std::clamp(i, first_pixel, last_pixel);
        ix[1] = std::clamp(i + 1, first_pixel, last_pixel);
        wt[0] = 1.0f - a;
        wt[1] = a;
        break;
      }
      case Filter::kArea: {
        const double lo = start + o * scale;
        const double hi = lo + scale;
        int k = 0;
        for (int i = static_cast<int>(std::floor(lo)); i < hi - kEpsilon && k < taps; ++i, ++k) {
          const double cover = std::min(hi, i + 1.0) - std::max(lo, static_cast<double>(i));
          ix[k] = std::clamp(i, first_pixel, last_pixel);
          wt[k] = static_cast<float>(cover / scale);
        }
        break;
      }
    }
  }
}

// One axis of taps: output o reads pixels index[o * count + k] with weight
// weight[o * count + k].
struct Taps {
  const int* index;
  const float* weight;
  int count;
};

// The separable filter's two passes, output row by output row: the source
// rows blended over the box's columns (from px0, `columns` wide) into `row`,
// then the columns blended into bytes. Compiled for AVX2 as well where GCC
// can dispatch at run time (the vertical pass is auto-vectorized); the
// arithmetic is the same in every version (no FMA contraction), so is the
// output.
FEEDLINE_VECTOR_CLONES void FilterRows(const RgbImage& src, int px0, int columns,
                                       const Taps& xt, const Taps& yt, float* row, uint8_t* out,
                                       int out_width, int out_height, size_t out_stride) {
  const int* x_index = xt.index;
  const float* x_weight = xt.weight;
  const int tx = xt.count;
  const int* y_index = yt.index;
  const float* y_weight = yt.weight;
  const int ty = yt.count;
  const size_t src_stride = static_cast<size_t>(src.width) * 3;
  const int n = columns * 3;
  for (int oy = 0; oy < out_height; ++oy) {
    // 1. Vertical: blend the source rows of this output row, over the
    // columns the box touches.
    const int* yi = y_index + static_cast<size_t>(oy) * ty;
    const float* yw = y_weight + static_cast<size_t>(oy) * ty;
    {
      const uint8_t* s = src.pixels + yi[0] * src_stride + static_cast<size_t>(px0) * 3;
      const float weight = yw[0];
      for (int i = 0; i < n; ++i) row[i] = weight * s[i];
    }
    for (int k = 1; k < ty; ++k) {
      const float weight = yw[k];
      if (weight == 0.0f) continue;
      const uint8_t* s = src.pixels + yi[k] * src_stride + static_cast<size_t>(px0) * 3;
      for (int i = 0; i < n; ++i) row[i] += weight * s[i];
    }
    // 2. Horizontal: blend columns into the output row, rounding to bytes.
    uint8_t* o = out + static_cast<size_t>(oy) * out_stride;
#if defined(__SSE2__)
    // The three channels of a pixel in one vector (the fourth lane, the next
    // pixel's red or the zero after the row, is dropped): the same products
    // and sums in the same order as the scalar loop below, a third of the
    // instructions. This loop was most of an area resize's time.
    const __m128 half = _mm_set1_ps(0.5f), zero = _mm_setzero_ps(), top = _mm_set1_ps(255.0f);
    for (int ox = 0; ox < out_width; ++ox) {
      const int* xi = x_index + static_cast<size_t>(ox) * tx;
      const float* xw = x_weight + static_cast<size_t>(ox) * tx;
      __m128 sum = _mm_setzero_ps();
      for (int k = 0; k < tx; ++k) {
        const __m128 pixel = _mm_loadu_ps(row + (xi[k] - px0) * 3);
        sum = _mm_add_ps(sum, _mm_mul_ps(_mm_set1_ps(xw[k]), pixel));
      }
      sum = _mm_min_ps(_mm_max_ps(_mm_add_ps(sum, half), zero), top);
      alignas(16) int32_t level[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(level), _mm_cvttps_epi32(sum));
      o[3 * ox] = static_cast<uint8_t>(level[0]);
      o[3 * ox + 1] = static_cast<uint8_t>(level[1]);
      o[3 * ox + 2] = static_cast<uint8_t>(level[2]);
    }
#else
    for (int ox = 0; ox < out_width; ++ox) {
      const int* xi = x_index + static_cast<size_t>(ox) * tx;
      const float* xw = x_weight + static_cast<size_t>(ox) * tx;
      float r = 0, g = 0, b = 0;
      for (int k = 0; k < tx; ++k) {
        const float* p = row + (xi[k] - px0) * 3;
        r += xw[k] * p[0];
        g += xw[k] * p[1];
        b += xw[k] * p[2];
      }
      o[3 * ox] = static_cast<uint8_t>(std::clamp(r + 0.5f, 0.0f, 255.0f));
      o[3 * ox + 1] = static_cast<uint8_t>(std::clamp(g + 0.5f, 0.0f, 255.0f));
      o[3 * ox + 2] = static_cast<uint8_t>(std::clamp(b + 0.5f, 0.0f, 255.0f));
    }
#endif
  }
}

}  // namespace

std::optional<PixelBox> WholePixels(const RgbImage& src, double x, double y, double w, double h) {
  if (!(IsWhole(x) && IsWhole(y) && IsWhole(w) && IsWhole(h))) return std::nullopt;
  const int x0 = std::clamp(static_cast<int>(std::nearbyint(x)), 0, src.width - 1);
  const int y0 = std::clamp(static_cast<int>(std::nearbyint(y)), 0, src.height - 1);
  const int x1 = std::clamp(static_cast<int>(std::nearbyint(x + w)), x0 + 1, src.width);
  const int y1 = std::clamp(static_cast<int>(std::nearbyint(y + h)), y0 + 1, src.height);
  return PixelBox{x0, y0, x1 - x0, y1 - y0};
}

void ResampleBox(const RgbImage& src, double x, double y, double w, double h, uint8_t* out,
                 int out_width, int out_height, size_t out_stride, Filter filter,
                 std::vector<uint8_t>& buffer) {
  if (const std::optional<PixelBox> whole = WholePixels(src, x, y, w, h)) {
    const int x0 = whole->x, y0 = whole->y;
    const int x1 = x0 + whole->width, y1 = y0 + whole->height;
    const cv::Mat image(src.height, src.width, CV_8UC3, const_cast<uint8_t*>(src.pixels),
                        static_cast<size_t>(src.width) * 3);
    const cv::Mat roi = image(cv::Rect(x0, y0, x1 - x0, y1 - y0));
    cv::Mat dst(out_height, out_width, CV_8UC3, out, out_stride);
    // OpenCV's area filter is fast for whole-number factors only; other
    // factors go to the separable filter below, many times faster.
    const bool whole_factors = roi.cols % out_width == 0 && roi.rows % out_height == 0;
    if (roi.size() == dst.size()) {
      roi.copyTo(dst);
      return;
    }
    if (filter != Filter::kArea || whole_factors || roi.cols < out_width || roi.rows < out_height) {
      cv::resize(roi, dst, dst.size(), 0, 0, CvFlag(filter));
      return;
    }
    x = x0;
    y = y0;
    w = x1 - x0;
    h = y1 - y0;
  }

  // The source pixels the box touches.
  const int px0 = std::clamp(static_cast<int>(std::floor(x + kEpsilon)), 0, src.width - 1);
  const int px1 = std::clamp(static_cast<int>(std::ceil(x + w - kEpsilon)) - 1, px0, src.width - 1);
  const int py0 = std::clamp(static_cast<int>(std::floor(y + kEpsilon)), 0, src.height - 1);
  const int py1 =
      std::clamp(static_cast<int>(std::ceil(y + h - kEpsilon)) - 1, py0, src.height - 1);
  const int columns = px1 - px0 + 1;
  const int tx = TapsPerOutput(filter, w / out_width);
  const int ty = TapsPerOutput(filter, h / out_height);

  ScratchArena arena(buffer);
  arena.Reserve<int>(static_cast<size_t>(out_width) * tx);
  arena.Reserve<float>(static_cast<size_t>(out_width) * tx);
  arena.Reserve<int>(static_cast<size_t>(out_height) * ty);
  arena.Reserve<float>(static_cast<size_t>(out_height) * ty);
  arena.Reserve<float>(static_cast<size_t>(columns) * 3 + 1);  // + a zero after the row
  arena.Allocate();
  int* x_index = arena.Take<int>(static_cast<size_t>(out_width) * tx);
  float* x_weight = arena.Take<float>(static_cast<size_t>(out_width) * tx);
  int* y_index = arena.Take<int>(static_cast<size_t>(out_height) * ty);
  float* y_weight = arena.Take<float>(static_cast<size_t>(out_height) * ty);
  float* row = arena.Take<float>(static_cast<size_t>(columns) * 3 + 1);
  row[static_cast<size_t>(columns) * 3] = 0.0f;  // read, never used, by the last pixel's vector
  MakeTaps(filter, x, w, out_width, px0, px1, tx, x_index, x_weight);
  MakeTaps(filter, y, h, out_height, py0, py1, ty, y_index, y_weight);

  FilterRows(src, px0, columns, Taps{x_index, x_weight, tx}, Taps{y_index, y_weight, ty}, row, out,
             out_width, out_height, out_stride);
}

}  // namespace feedline::vision::internal
