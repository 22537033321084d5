// The pipeline's last step: flip, value mapping and layout in one pass from
// resampled RGB pixels into the destination tensor (often a batch row).
//
// Values: without Normalize, x / 255 (ToTensor); with it,
// fmaf(x, scale[c], bias[c]) where scale = 1 / (255 std) and
// bias = -mean / std, both rounded to float. One fused multiply-add keeps
// the result identical whether it comes from the table (any CPU) or from
// AVX2 + FMA instructions (where the CPU has them).
#ifndef FEEDLINE_SRC_VISION_WRITE_OUTPUT_H_
#define FEEDLINE_SRC_VISION_WRITE_OUTPUT_H_

#include <array>
#include <cstdint>

#include "feedline/tensor.h"

namespace feedline::vision::internal {

using ValueTable = std::array<std::array<float, 256>, 3>;
using HalfTable = std::array<std::array<uint16_t, 256>, 3>;

struct ValueMap {
  std::array<float, 3> scale = {1, 1, 1};
  std::array<float, 3> bias = {0, 0, 0};
  bool divide = true;  // x / 255, no Normalize
  ValueTable f32{};    // the value of each byte, per channel
  HalfTable f16{};     // the same as IEEE half (round to nearest even)
};

// The map for Normalize(mean, std), or for no Normalize when either is null.
ValueMap MakeValueMap(const std::array<float, 3>* mean, const std::array<float, 3>* std);

// Writes `rgb` (height rows of width * 3 bytes) into `dst` as `dtype`
// (u8, f16 or f32), [3, height, width] if chw else [height, width, 3],
// mirrored left-right if flip.
void WriteOutput(const uint8_t* rgb, int width, int height, bool flip, bool chw, DType dtype,
                 const ValueMap& map, void* dst);

// The same without the vector path: the reference for tests.
void WriteOutputScalar(const uint8_t* rgb, int width, int height, bool flip, bool chw, DType dtype,
                       const ValueMap& map, void* dst);

// True if WriteOutput uses AVX2 on this CPU.
bool WriteOutputIsVectorized();

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_WRITE_OUTPUT_H_
