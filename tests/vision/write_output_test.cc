#include "src/vision/write_output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "feedline/synth/synth.h"
#include "feedline/vision/transforms.h"

namespace feedline::vision::internal {
namespace {

TEST(ValueMap, IsOneFusedMultiplyAdd) {
  const std::array<float, 3> mean = {0.5f, 0.25f, 0.125f};
  const std::array<float, 3> std = {0.2f, 0.3f, 0.7f};
  const ValueMap map = MakeValueMap(&mean, &std);
  EXPECT_FALSE(map.divide);
  for (int c = 0; c < 3; ++c) {
    const float scale = static_cast<float>(1.0 / (255.0 * std[c]));
    const float bias = static_cast<float>(-mean[c] / static_cast<double>(std[c]));
    for (int v = 0; v < 256; ++v) {
      ASSERT_EQ(map.f32[c][v], std::fmaf(static_cast<float>(v), scale, bias));
      ASSERT_EQ(map.f16[c][v], FloatToHalf(map.f32[c][v]));
    }
  }
  const ValueMap plain = MakeValueMap(nullptr, nullptr);
  EXPECT_TRUE(plain.divide);
  for (int v = 0; v < 256; ++v) ASSERT_EQ(plain.f32[1][v], static_cast<float>(v) / 255.0f);
}

// The vector path (where the CPU has AVX2) writes exactly what the scalar
// one does, for every width (tails of 0..7 pixels), flip, layout and dtype.
TEST(WriteOutput, VectorPathEqualsScalarPath) {
  const ValueMap normalized = MakeValueMap(&kImageNetMean, &kImageNetStd);
  const ValueMap plain = MakeValueMap(nullptr, nullptr);
  for (int width : {1, 7, 8, 9, 16, 23, 224}) {
    const int height = 5;
    const std::vector<uint8_t> rgb = SynthesizeImage(width, height, static_cast<uint64_t>(width));
    for (const ValueMap* map : {&normalized, &plain}) {
      for (DType dtype : {DType::kF32, DType::kF16, DType::kU8}) {
        for (bool chw : {false, true}) {
          for (bool flip : {false, true}) {
            const size_t bytes = static_cast<size_t>(width) * height * 3 * DTypeSize(dtype);
            std::vector<uint8_t> fast(bytes, 0xAB), slow(bytes, 0xCD);
            WriteOutput(rgb.data(), width, height, flip, chw, dtype, *map, fast.data());
            WriteOutputScalar(rgb.data(), width, height, flip, chw, dtype, *map, slow.data());
            ASSERT_EQ(fast, slow) << "width " << width << " dtype " << DTypeName(dtype) << " chw "
                                  << chw << " flip " << flip;
          }
        }
      }
    }
  }
  RecordProperty("vectorized", WriteOutputIsVectorized() ? "yes" : "no");
}

TEST(WriteOutputScalar, LaysOutAndFlips) {
  // Two pixels: (1, 2, 3) and (4, 5, 6).
  const std::vector<uint8_t> rgb = {1, 2, 3, 4, 5, 6};
  const ValueMap map = MakeValueMap(nullptr, nullptr);
  std::vector<uint8_t> out(6);
  WriteOutputScalar(rgb.data(), 2, 1, /*flip=*/false, /*chw=*/true, DType::kU8, map, out.data());
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 4, 2, 5, 3, 6}));
  WriteOutputScalar(rgb.data(), 2, 1, /*flip=*/true, /*chw=*/true, DType::kU8, map, out.data());
  EXPECT_EQ(out, (std::vector<uint8_t>{4, 1, 5, 2, 6, 3}));
  WriteOutputScalar(rgb.data(), 2, 1, /*flip=*/true, /*chw=*/false, DType::kU8, map, out.data());
  EXPECT_EQ(out, (std::vector<uint8_t>{4, 5, 6, 1, 2, 3}));
  std::vector<float> floats(6);
  WriteOutputScalar(rgb.data(), 2, 1, false, false, DType::kF32, map, floats.data());
  EXPECT_EQ(floats[5], 6.0f / 255.0f);
}

}  // namespace
}  // namespace feedline::vision::internal
