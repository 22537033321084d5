#include "src/vision/resize_linear.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "src/vision/scratch_arena.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define FEEDLINE_HAVE_X86 1
#endif

namespace feedline::vision::internal {
namespace {

constexpr int kGroup = 8;  // outputs per vector

// One axis: output o blends pixels i0[o] and i1[o] (relative to the box) with
// weight w[o] on i1.
struct Axis {
  int* i0;
  int* i1;
  float* w;
};

void MakeAxis(int length, int outputs, const Axis& axis) {
  const double scale = static_cast<double>(length) / outputs;
  for (int o = 0; o < outputs; ++o) {
    const double c = (o + 0.5) * scale - 0.5;
    const double f = std::floor(c);
    const int i = static_cast<int>(f);
    axis.i0[o] = std::clamp(i, 0, length - 1);
    axis.i1[o] = std::clamp(i + 1, 0, length - 1);
    axis.w[o] = static_cast<float>(c - f);
  }
}

// An axis of `outputs` taps in scratch: Reserve before Allocate, Take after,
// in the same order as the other arrays.
void ReserveAxis(ScratchArena& arena, int outputs) {
  arena.Reserve<int>(static_cast<size_t>(outputs));
  arena.Reserve<int>(static_cast<size_t>(outputs));
  arena.Reserve<float>(static_cast<size_t>(outputs));
}
Axis TakeAxis(ScratchArena& arena, int outputs) {
  // Braced initializers run left to right: i0, i1, w, as reserved.
  return Axis{arena.Take<int>(static_cast<size_t>(outputs)),
              arena.Take<int>(static_cast<size_t>(outputs)),
              arena.Take<float>(static_cast<size_t>(outputs))};
}

float Round(float v) { return std::clamp(std::floor(v + 0.5f), 0.0f, 255.0f); }

// Where row oy of channel c's plane (chw) or of the image starts, in
// elements.
size_t RowStart(const OutputFormat& format, int c, int oy, int width, int height) {
  const size_t row = format.row_stride != 0 ? format.row_stride : static_cast<size_t>(width);
  if (format.chw) {
    const size_t plane = format.plane_stride != 0 ? format.plane_stride : row * height;
    return static_cast<size_t>(c) * plane + static_cast<size_t>(oy) * row;
  }
  return static_cast<size_t>(oy) * row * 3;
}

// Where value (c, oy, ox) of the output goes, in elements.
size_t OutputIndex(const OutputFormat& format, int c, int oy, int ox, int width, int height) {
  if (format.flip) ox = width - 1 - ox;
  if (format.chw) return RowStart(format, c, oy, width, height) + ox;
  return RowStart(format, c, oy, width, height) + static_cast<size_t>(ox) * 3 + c;
}

// Stores the rounded level q of channel c at output (oy, ox).
void Store(const OutputFormat& format, int c, int oy, int ox, int width, int height, float q,
           void* dst) {
  const size_t at = OutputIndex(format, c, oy, ox, width, height);
  const int level = static_cast<int>(q);
  switch (format.dtype) {
    case DType::kF32:
      static_cast<float*>(dst)[at] = format.map->f32[c][level];
      break;
    case DType::kF16:
      static_cast<uint16_t*>(dst)[at] = format.map->f16[c][level];
      break;
    default:
      static_cast<uint8_t*>(dst)[at] = static_cast<uint8_t>(level);
      break;
  }
}

}  // namespace

void ResizeLinearIntoScalar(const RgbImage& src, int x, int y, int w, int h, int out_width,
                            int out_height, const OutputFormat& format, void* dst,
                            std::vector<uint8_t>& scratch) {
  ScratchArena arena(scratch);
  ReserveAxis(arena, out_width);
  ReserveAxis(arena, out_height);
  arena.Allocate();
  const Axis ax = TakeAxis(arena, out_width);
  const Axis ay = TakeAxis(arena, out_height);
  MakeAxis(w, out_width, ax);
  MakeAxis(h, out_height, ay);
  const size_t stride = static_cast<size_t>(src.width) * 3;
  auto pixel = [&](int row, int column, int c) {
    return static_cast<float>(
        src.pixels[static_cast<size_t>(y + row) * stride + static_cast<size_t>(x + column) * 3 + c]);
  };
  for (int oy = 0; oy < out_height; ++oy) {
    for (int ox = 0; ox < out_width; ++ox) {
      for (int c = 0; c < 3; ++c) {
        float rows[2];
        for (int k = 0; k < 2; ++k) {
          const int row = k == 0 ? ay.i0[oy] : ay.i1[oy];
          const float a = pixel(row, ax.i0[ox], c), b = pixel(row, ax.i1[ox], c);
          rows[k] = std::fmaf(ax.w[ox], b - a, a);
        }
        const float v = std::fmaf(ay.w[oy], rows[1] - rows[0], rows[0]);
        Store(format, c, oy, ox, out_width, out_height, Round(v), dst);
      }
    }
  }
}

#if FEEDLINE_HAVE_X86

namespace {

#define FEEDLINE_AVX2 __attribute__((target("avx2,fma,f16c")))

// The horizontal taps, per group of kGroup outputs: the group reads the
// pixels base .. base + 15 (two vectors of RGBX), and its outputs pick
// lanes rel0 / rel1 of them. A group whose taps span more than 16 pixels
// (shrinking by nearly 2 or more) is done one value at a time.
struct RowPlan {
  int groups;
  int padded;  // groups * kGroup
  Axis taps;   // padded entries; the last output repeats
  int* base;
  uint8_t* vector_ok;
  int* rel0;
  int* rel1;
};

// RGB bytes -> RGBX words (X = 0) for pixels [x, x + w) of one row. Vector
// loads read 4 bytes past the 8 pixels they expand, so the last pixels of
// the image row go one at a time.
FEEDLINE_AVX2 void ExpandRow(const uint8_t* row, int x, int w, int image_width, uint32_t* out) {
  const __m256i spread = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                          0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  int i = 0;
  for (; i + kGroup <= w && x + i + kGroup + 2 <= image_width; i += kGroup) {
    const uint8_t* p = row + static_cast<size_t>(x + i) * 3;
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 12));
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_shuffle_epi8(both, spread));
  }
  for (; i < w; ++i) {
    const uint8_t* p = row + static_cast<size_t>(x + i) * 3;
    out[i] = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16;
  }
}

// Resamples one expanded row horizontally into three planes of `padded`
// floats.
FEEDLINE_AVX2 void FilterRow(const uint32_t* pixels, const RowPlan& plan, float* planes) {
  const __m256i seven = _mm256_set1_epi32(7);
  // Byte c of each RGBX word, zero-extended to 32 bits.
  __m256i channel[3];
  for (int c = 0; c < 3; ++c) {
    const char i = static_cast<char>(c);
    channel[c] = _mm256_setr_epi8(i, -1, -1, -1, i + 4, -1, -1, -1, i + 8, -1, -1, -1, i + 12, -1,
                                  -1, -1, i, -1, -1, -1, i + 4, -1, -1, -1, i + 8, -1, -1, -1,
                                  i + 12, -1, -1, -1);
  }
  for (int g = 0; g < plan.groups; ++g) {
    const int o = g * kGroup;
    if (!plan.vector_ok[g]) {
      for (int k = o; k < o + kGroup; ++k) {
        const uint32_t a = pixels[plan.taps.i0[k]], b = pixels[plan.taps.i1[k]];
        for (int c = 0; c < 3; ++c) {
          const float fa = static_cast<float>((a >> (8 * c)) & 0xff);
          const float fb = static_cast<float>((b >> (8 * c)) & 0xff);
          planes[c * plan.padded + k] = std::fmaf(plan.taps.w[k], fb - fa, fa);
        }
      }
      continue;
    }
    const uint32_t* p = pixels + plan.base[g];
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kGroup));
    const __m256i r0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(plan.rel0 + o));
    const __m256i r1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(plan.rel1 + o));
    const __m256i a = _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(lo, r0),
                                         _mm256_permutevar8x32_epi32(hi, r0),
                                         _mm256_cmpgt_epi32(r0, seven));
    const __m256i b = _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(lo, r1),
                                         _mm256_permutevar8x32_epi32(hi, r1),
                                         _mm256_cmpgt_epi32(r1, seven));
    const __m256 w = _mm256_load_ps(plan.taps.w + o);
    for (int c = 0; c < 3; ++c) {
      const __m256 fa = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(a, channel[c]));
      const __m256 fb = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(b, channel[c]));
      _mm256_store_ps(planes + c * plan.padded + o, _mm256_fmadd_ps(w, _mm256_sub_ps(fb, fa), fa));
    }
  }
}

// Rounded levels of eight outputs: floor(fmaf(wy, h1 - h0, h0) + 0.5).
// No clamp is needed: each blend is a + w (b - a) with w in [0, 1), whose
// exact value lies between a and b, and rounding to the nearest float never
// crosses the representable bounds 0 and 255; Round's clamp never acts.
FEEDLINE_AVX2 __m256 Blend(const float* h0, const float* h1, __m256 wy) {
  const __m256 a = _mm256_load_ps(h0), b = _mm256_load_ps(h1);
  const __m256 v = _mm256_fmadd_ps(wy, _mm256_sub_ps(b, a), a);
  return _mm256_floor_ps(_mm256_add_ps(v, _mm256_set1_ps(0.5f)));
}

// Outputs at least this large are written with streaming stores, which skip
// reading each destination line into the cache first: a batch row of a
// 224x224 float image is 600 KB, a whole batch tens of MB, far past any
// cache, and the reads cost memory bandwidth the decoders need (about 2% of
// images/s in `feedline bench`, 2026-11-29). Small outputs, which a training
// step may find still in cache, keep ordinary stores.
constexpr size_t kStreamBytes = size_t{256} << 10;

// Channels-first float output of one row, mapped and (if flip) mirrored.
// kStream: vector stores bypass the cache (REQUIRES 32-byte aligned rows).
template <bool kHalf, bool kStream>
FEEDLINE_AVX2 void EmitChwRow(const float* h0, const float* h1, float wy_scalar, int padded,
                              int width, int height, int oy, const OutputFormat& format,
                              void* dst) {
  const ValueMap& map = *format.map;
  // Locals, not loads through `format` and `map`: the stores below may alias
  // them as far as the compiler knows.
  const bool flip = format.flip;
  const bool divide = map.divide;
  const __m256 wy = _mm256_set1_ps(wy_scalar);
  const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  const __m256 k255 = _mm256_set1_ps(255.0f);
  for (int c = 0; c < 3; ++c) {
    const __m256 scale = _mm256_set1_ps(map.scale[c]);
    const __m256 bias = _mm256_set1_ps(map.bias[c]);
    const float* a = h0 + c * padded;
    const float* b = h1 + c * padded;
    const size_t row = RowStart(format, c, oy, width, height);
    int ox = 0;
    for (; ox + kGroup <= width; ox += kGroup) {
      __m256 v = Blend(a + ox, b + ox, wy);
      v = divide ? _mm256_div_ps(v, k255) : _mm256_fmadd_ps(v, scale, bias);
      const size_t at = row + (flip ? width - kGroup - ox : ox);
      if (flip) v = _mm256_permutevar8x32_ps(v, reverse);
      if constexpr (kHalf) {
        auto* out = reinterpret_cast<__m128i*>(static_cast<uint16_t*>(dst) + at);
        const __m128i half = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if constexpr (kStream) {
          _mm_stream_si128(out, half);
        } else {
          _mm_storeu_si128(out, half);
        }
      } else if constexpr (kStream) {
        _mm256_stream_ps(static_cast<float*>(dst) + at, v);
      } else {
        _mm256_storeu_ps(static_cast<float*>(dst) + at, v);
      }
    }
    for (; ox < width; ++ox) {
      const float q = Round(std::fmaf(wy_scalar, b[ox] - a[ox], a[ox]));
      Store(format, c, oy, ox, width, height, q, dst);
    }
  }
}

// Packed RGB bytes of one row (u8, channels last), mirrored if flip.
FEEDLINE_AVX2 void EmitHwcBytesRow(const float* h0, const float* h1, float wy_scalar, int padded,
                                   int width, int height, int oy, const OutputFormat& format,
                                   void* dst) {
  const bool flip = format.flip;
  const __m256 wy = _mm256_set1_ps(wy_scalar);
  const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  // [R0..R7 G0..G7] and [B0..B7] -> R0 G0 B0 R1 ... B7 (24 bytes).
  const __m128i rg_lo = _mm_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5);
  const __m128i b_lo = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
  const __m128i rg_hi = _mm_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b_hi = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  uint8_t* out = static_cast<uint8_t*>(dst) + RowStart(format, 0, oy, width, height);
  int ox = 0;
  for (; ox + kGroup <= width; ox += kGroup) {
    __m256i level[3];
    for (int c = 0; c < 3; ++c) {
      __m256 q = Blend(h0 + c * padded + ox, h1 + c * padded + ox, wy);
      if (flip) q = _mm256_permutevar8x32_ps(q, reverse);
      level[c] = _mm256_cvttps_epi32(q);
    }
    // 32-bit levels -> bytes: [R0..R7 G0..G7] and [B0..B7].
    const __m256i rg16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(level[0], level[1]), 0xD8);
    const __m256i bb16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(level[2], level[2]), 0xD8);
    const __m128i rg = _mm_packus_epi16(_mm256_castsi256_si128(rg16),
                                        _mm256_extracti128_si256(rg16, 1));
    const __m128i bb = _mm_packus_epi16(_mm256_castsi256_si128(bb16), _mm256_castsi256_si128(bb16));
    const __m128i first = _mm_or_si128(_mm_shuffle_epi8(rg, rg_lo), _mm_shuffle_epi8(bb, b_lo));
    const __m128i last = _mm_or_si128(_mm_shuffle_epi8(rg, rg_hi), _mm_shuffle_epi8(bb, b_hi));
    uint8_t* p = out + static_cast<size_t>(flip ? width - kGroup - ox : ox) * 3;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), first);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), last);
  }
  for (; ox < width; ++ox) {
    for (int c = 0; c < 3; ++c) {
      const float* a = h0 + c * padded;
      const float* b = h1 + c * padded;
      Store(format, c, oy, ox, width, height, Round(std::fmaf(wy_scalar, b[ox] - a[ox], a[ox])),
            dst);
    }
  }
}

// Channels-first bytes of one row (u8 CHW, what PILToTensor gives), mirrored
// if flip. Was the one-at-a-time path: a third slower in images/s than the
// float output through the loader (2026-11-30).
FEEDLINE_AVX2 void EmitChwBytesRow(const float* h0, const float* h1, float wy_scalar, int padded,
                                   int width, int height, int oy, const OutputFormat& format,
                                   void* dst) {
  const bool flip = format.flip;
  const __m256 wy = _mm256_set1_ps(wy_scalar);
  const __m256i reverse = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
  for (int c = 0; c < 3; ++c) {
    const float* a = h0 + c * padded;
    const float* b = h1 + c * padded;
    uint8_t* row = static_cast<uint8_t*>(dst) + RowStart(format, c, oy, width, height);
    int ox = 0;
    for (; ox + kGroup <= width; ox += kGroup) {
      __m256 q = Blend(a + ox, b + ox, wy);
      if (flip) q = _mm256_permutevar8x32_ps(q, reverse);
      const __m256i level = _mm256_cvttps_epi32(q);
      // 32-bit levels -> bytes; the saturating packs clamp to [0, 255] as Round does.
      const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(level),
                                             _mm256_extracti128_si256(level, 1));
      const __m128i bytes = _mm_packus_epi16(words, words);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(row + (flip ? width - kGroup - ox : ox)), bytes);
    }
    for (; ox < width; ++ox) {
      Store(format, c, oy, ox, width, height, Round(std::fmaf(wy_scalar, b[ox] - a[ox], a[ox])),
            dst);
    }
  }
}

// Any other format (channels-last floats): rounded
// levels one at a time.
void EmitAnyRow(const float* h0, const float* h1, float wy, int padded, int width, int height,
                int oy, const OutputFormat& format, void* dst) {
  for (int c = 0; c < 3; ++c) {
    const float* a = h0 + c * padded;
    const float* b = h1 + c * padded;
    for (int ox = 0; ox < width; ++ox) {
      Store(format, c, oy, ox, width, height, Round(std::fmaf(wy, b[ox] - a[ox], a[ox])), dst);
    }
  }
}

}  // namespace

void ResizeLinearInto(const RgbImage& src, int x, int y, int w, int h, int out_width,
                      int out_height, const OutputFormat& format, void* dst,
                      std::vector<uint8_t>& scratch) {
  const int groups = (out_width + kGroup - 1) / kGroup;
  const int padded = groups * kGroup;
  ScratchArena arena(scratch);
  ReserveAxis(arena, padded);  // plan.taps
  arena.Reserve<int>(groups);  // base
  arena.Reserve<uint8_t>(groups);
  arena.Reserve<int>(padded);  // rel0
  arena.Reserve<int>(padded);  // rel1
  ReserveAxis(arena, out_height);
  arena.Reserve<uint32_t>(static_cast<size_t>(w) + 2 * kGroup);  // expanded row + overread
  arena.Reserve<float>(static_cast<size_t>(6) * padded);         // two filtered rows
  arena.Allocate();
  RowPlan plan;
  plan.groups = groups;
  plan.padded = padded;
  plan.taps = TakeAxis(arena, padded);
  plan.base = arena.Take<int>(groups);
  plan.vector_ok = arena.Take<uint8_t>(groups);
  plan.rel0 = arena.Take<int>(padded);
  plan.rel1 = arena.Take<int>(padded);
  const Axis ay = TakeAxis(arena, out_height);
  uint32_t* expanded = arena.Take<uint32_t>(static_cast<size_t>(w) + 2 * kGroup);
  float* filtered = arena.Take<float>(static_cast<size_t>(6) * padded);

  MakeAxis(w, out_width, plan.taps);
  for (int o = out_width; o < padded; ++o) {
    plan.taps.i0[o] = plan.taps.i0[out_width - 1];
    plan.taps.i1[o] = plan.taps.i1[out_width - 1];
    plan.taps.w[o] = plan.taps.w[out_width - 1];
  }
  for (int g = 0; g < groups; ++g) {
    const int o = g * kGroup;
    const int base = plan.taps.i0[o];
    plan.base[g] = base;
    plan.vector_ok[g] = plan.taps.i1[o + kGroup - 1] - base < 2 * kGroup;
    for (int k = o; k < o + kGroup; ++k) {
      plan.rel0[k] = plan.taps.i0[k] - base;
      plan.rel1[k] = plan.taps.i1[k] - base;
    }
  }
  MakeAxis(h, out_height, ay);
  // Vector loads read up to 16 pixels from a group's base; those past the
  // box are never picked, but must be readable.
  std::memset(expanded + w, 0, sizeof(uint32_t) * 2 * kGroup);

  // Every row of every plane starts 32-byte aligned when the tensor does and
  // the width is a multiple of 8.
  const size_t out_bytes = static_cast<size_t>(out_width) * out_height * 3 * DTypeSize(format.dtype);
  const bool dense = format.row_stride == 0 && format.plane_stride == 0;
  const bool stream = dense && out_bytes >= kStreamBytes && out_width % kGroup == 0 &&
                      reinterpret_cast<uintptr_t>(dst) % 32 == 0;
  auto emit = &EmitAnyRow;
  if (format.chw && format.dtype == DType::kF32) {
    emit = stream ? &EmitChwRow<false, true> : &EmitChwRow<false, false>;
  }
  if (format.chw && format.dtype == DType::kF16) {
    emit = stream ? &EmitChwRow<true, true> : &EmitChwRow<true, false>;
  }
  if (!format.chw && format.dtype == DType::kU8) emit = &EmitHwcBytesRow;
  if (format.chw && format.dtype == DType::kU8) emit = &EmitChwBytesRow;

  // Two filtered rows, kept while consecutive output rows share them.
  float* slot[2] = {filtered, filtered + 3 * padded};
  int held[2] = {-1, -1};
  const size_t stride = static_cast<size_t>(src.width) * 3;
  auto filtered_row = [&](int row, int keep) -> const float* {
    for (int s = 0; s < 2; ++s) {
      if (held[s] == row) return slot[s];
    }
    const int s = held[0] == keep ? 1 : 0;  // never evict the other tap's row
    ExpandRow(src.pixels + static_cast<size_t>(y + row) * stride, x, w, src.width, expanded);
    FilterRow(expanded, plan, slot[s]);
    held[s] = row;
    return slot[s];
  };
  for (int oy = 0; oy < out_height; ++oy) {
    const float* h0 = filtered_row(ay.i0[oy], ay.i1[oy]);
    const float* h1 = filtered_row(ay.i1[oy], ay.i0[oy]);
    emit(h0, h1, ay.w[oy], padded, out_width, out_height, oy, format, dst);
  }
  // Streaming stores are weakly ordered: make them visible before the
  // engine's release of the row publishes it to the consumer.
  if (stream) _mm_sfence();
}

// The same instructions as WriteOutput's vector path: AVX2, FMA and F16C.
bool LinearResizeIsVectorized() { return WriteOutputIsVectorized(); }

#else  // no x86-64: the pipeline never calls the vector path

void ResizeLinearInto(const RgbImage& src, int x, int y, int w, int h, int out_width,
                      int out_height, const OutputFormat& format, void* dst,
                      std::vector<uint8_t>& scratch) {
  ResizeLinearIntoScalar(src, x, y, w, h, out_width, out_height, format, dst, scratch);
}

bool LinearResizeIsVectorized() { return false; }

#endif

}  // namespace feedline::vision::internal
