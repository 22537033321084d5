#include "src/vision/resize_linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "feedline/rng.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/transforms.h"
#include "src/vision/resample.h"
#include "tests/vision/resample_reference.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision::internal {
namespace {

struct Box {
  int x, y, w, h, ow, oh;
};

// Downscales (by up to 2.3, past the vector path's 16-pixel window), upscales,
// identity and odd widths whose last group is partial.
const Box kBoxes[] = {
    {0, 0, 160, 120, 224, 168},  // enlarge
    {7, 5, 120, 90, 100, 80},    // shrink 1.2
    {3, 2, 150, 110, 81, 60},    // shrink ~1.85: groups at the window's edge
    {0, 0, 160, 120, 70, 52},    // shrink ~2.3: groups done one value at a time
    {10, 10, 50, 40, 50, 40},    // identity
    {1, 1, 33, 17, 9, 13},       // tail of one output
    {20, 30, 1, 1, 15, 7},       // one source pixel
    {0, 0, 160, 1, 23, 3},       // one source row
};

std::string Describe(const Box& b, DType dtype, bool chw, bool flip) {
  return std::to_string(b.w) + "x" + std::to_string(b.h) + "@" + std::to_string(b.x) + "," +
         std::to_string(b.y) + " -> " + std::to_string(b.ow) + "x" + std::to_string(b.oh) + " " +
         DTypeName(dtype) + (chw ? " chw" : " hwc") + (flip ? " flip" : "");
}

class ResizeLinearTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LinearResizeIsVectorized()) {
      GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C; the pipeline uses cv::resize here";
    }
  }
};

// The vector kernel writes exactly what the scalar statement of the same
// arithmetic writes, for every format, flip and box shape.
TEST_F(ResizeLinearTest, VectorPathEqualsScalarPath) {
  const int w0 = 160, h0 = 120;
  const std::vector<uint8_t> pixels = SynthesizeImage(w0, h0, 61);
  const RgbImage src{pixels.data(), w0, h0};
  const ValueMap normalized = MakeValueMap(&kImageNetMean, &kImageNetStd);
  const ValueMap plain = MakeValueMap(nullptr, nullptr);
  std::vector<uint8_t> scratch_a, scratch_b;
  for (const Box& b : kBoxes) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kU8}) {
      for (bool chw : {true, false}) {
        for (bool flip : {false, true}) {
          for (const ValueMap* map : {&normalized, &plain}) {
            const OutputFormat format{dtype, chw, flip, map};
            const size_t bytes = static_cast<size_t>(b.ow) * b.oh * 3 * DTypeSize(dtype);
            std::vector<uint8_t> fast(bytes, 0xAB), slow(bytes, 0xCD);
            ResizeLinearInto(src, b.x, b.y, b.w, b.h, b.ow, b.oh, format, fast.data(), scratch_a);
            ResizeLinearIntoScalar(src, b.x, b.y, b.w, b.h, b.ow, b.oh, format, slow.data(),
                                   scratch_b);
            ASSERT_EQ(fast, slow) << Describe(b, dtype, chw, flip);
          }
        }
      }
    }
  }
}

// A destination inside a larger image (row and plane strides, an origin
// inside it) gets the dense output's values in its rectangle, and nothing
// outside it changes: vector and scalar paths alike.
TEST_F(ResizeLinearTest, AStridedDestinationGetsTheDenseValuesInItsRectangle) {
  const int w0 = 160, h0 = 120;
  const std::vector<uint8_t> pixels = SynthesizeImage(w0, h0, 62);
  const RgbImage src{pixels.data(), w0, h0};
  const ValueMap plain = MakeValueMap(nullptr, nullptr);
  std::vector<uint8_t> scratch;
  for (const Box& b : kBoxes) {
    for (DType dtype : {DType::kF32, DType::kU8}) {
      for (bool chw : {true, false}) {
        for (bool flip : {false, true}) {
          for (bool vector : {true, false}) {
            const size_t size = DTypeSize(dtype);
            const int width = b.ow + 5, height = b.oh + 3, left = 2, top = 1;
            OutputFormat format{dtype, chw, flip, &plain};
            std::vector<uint8_t> dense(static_cast<size_t>(b.ow) * b.oh * 3 * size);
            auto resize = vector ? &ResizeLinearInto : &ResizeLinearIntoScalar;
            resize(src, b.x, b.y, b.w, b.h, b.ow, b.oh, format, dense.data(), scratch);
            // The whole image, each value's bytes 0xEE; the tile at (left, top).
            std::vector<uint8_t> image(static_cast<size_t>(width) * height * 3 * size, 0xEE);
            format.row_stride = static_cast<size_t>(width);
            format.plane_stride = chw ? static_cast<size_t>(width) * height : 0;
            const size_t origin = chw ? static_cast<size_t>(top) * width + left
                                      : (static_cast<size_t>(top) * width + left) * 3;
            resize(src, b.x, b.y, b.w, b.h, b.ow, b.oh, format, image.data() + origin * size,
                   scratch);
            for (int c = 0; c < 3; ++c) {
              for (int y = 0; y < height; ++y) {
                for (int x = 0; x < width; ++x) {
                  const size_t at = chw ? (static_cast<size_t>(c) * height + y) * width + x
                                        : (static_cast<size_t>(y) * width + x) * 3 + c;
                  const bool inside = x >= left && x < left + b.ow && y >= top && y < top + b.oh;
                  std::vector<uint8_t> want(size, 0xEE);
                  if (inside) {
                    const int tx = x - left, ty = y - top;
                    const size_t from = chw ? (static_cast<size_t>(c) * b.oh + ty) * b.ow + tx
                                            : (static_cast<size_t>(ty) * b.ow + tx) * 3 + c;
                    want.assign(dense.begin() + from * size, dense.begin() + (from + 1) * size);
                  }
                  ASSERT_EQ(std::vector<uint8_t>(image.begin() + at * size,
                                                 image.begin() + (at + 1) * size),
                            want)
                      << Describe(b, dtype, chw, flip) << (vector ? "" : " scalar") << " at ("
                      << c << ", " << y << ", " << x << ")";
                }
              }
            }
          }
        }
      }
    }
  }
}

// Both sides u8 [oh, ow, 3]: no level further apart than `worst`, and a mean
// difference under `mean`.
void ExpectClose(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& reference,
                 int worst, double mean, const std::string& what) {
  ASSERT_EQ(ours.size(), reference.size()) << what;
  int largest = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    largest = std::max(largest, std::abs(ours[i] - reference[i]));
  }
  EXPECT_LE(largest, worst) << what;
  EXPECT_LT(testing::MeanAbsDiff(ours, reference), mean) << what;
}

// Random boxes, output sizes (1 to 300 pixels a side, so factors from a
// 257x shrink to a 300x enlargement) and formats: the vector path always
// writes what the scalar one does, and nothing past the output.
TEST_F(ResizeLinearTest, RandomShapesMatchTheScalarPath) {
  const int w0 = 257, h0 = 131;
  const std::vector<uint8_t> pixels = SynthesizeImage(w0, h0, 67);
  const RgbImage src{pixels.data(), w0, h0};
  const ValueMap map = MakeValueMap(&kImageNetMean, &kImageNetStd);
  std::vector<uint8_t> scratch_a, scratch_b;
  Rng rng(68, 0, 0);
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kU8};
  for (int i = 0; i < 300; ++i) {
    const int w = 1 + static_cast<int>(rng.UniformInt(w0));
    const int h = 1 + static_cast<int>(rng.UniformInt(h0));
    const int x = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(w0 - w + 1)));
    const int y = static_cast<int>(rng.UniformInt(static_cast<uint64_t>(h0 - h + 1)));
    const int ow = 1 + static_cast<int>(rng.UniformInt(300));
    const int oh = 1 + static_cast<int>(rng.UniformInt(300));
    const DType dtype = dtypes[rng.UniformInt(3)];
    const OutputFormat format{dtype, rng.Bernoulli(0.5), rng.Bernoulli(0.5), &map};
    const size_t bytes = static_cast<size_t>(ow) * oh * 3 * DTypeSize(dtype);
    // A guard after the output catches writes past it.
    std::vector<uint8_t> fast(bytes + 64, 0xAB), slow(bytes + 64, 0xAB);
    // Every tenth call with fresh scratch: each function must size its own.
    if (i % 10 == 0) {
      scratch_a = {};
      scratch_b = {};
    }
    ResizeLinearInto(src, x, y, w, h, ow, oh, format, fast.data(), scratch_a);
    ResizeLinearIntoScalar(src, x, y, w, h, ow, oh, format, slow.data(), scratch_b);
    const Box b{x, y, w, h, ow, oh};
    ASSERT_EQ(fast, slow) << Describe(b, dtype, format.chw, format.flip);
    for (size_t k = bytes; k < fast.size(); ++k) ASSERT_EQ(fast[k], 0xAB) << "wrote past the end";
  }
}

// Float arithmetic is bilinear interpolation up to rounding: levels differ
// from the exact value's only where it lies within float error of a half.
// The sample positions are cv::INTER_LINEAR's (which ResampleBox calls for
// whole-pixel boxes): only OpenCV's 11-bit fixed-point weights separate the
// two, by one level at most.
TEST_F(ResizeLinearTest, IsExactBilinearAtOpenCvPositions) {
  const int w0 = 160, h0 = 120;
  const std::vector<uint8_t> pixels = SynthesizeImage(w0, h0, 65);
  const RgbImage src{pixels.data(), w0, h0};
  std::vector<uint8_t> scratch;
  for (const Box& b : kBoxes) {
    const size_t bytes = static_cast<size_t>(b.ow) * b.oh * 3;
    std::vector<uint8_t> ours(bytes), opencv(bytes);
    ResizeLinearInto(src, b.x, b.y, b.w, b.h, b.ow, b.oh, OutputFormat{}, ours.data(), scratch);
    const std::string what = Describe(b, DType::kU8, false, false);
    // Bilinear in double precision at the same positions, rounded half up.
    const std::vector<uint8_t> exact =
        ResampleReference(pixels, w0, h0, b.x, b.y, b.w, b.h, b.ow, b.oh, Filter::kLinear);
    ExpectClose(ours, exact, 1, 0.01, what);
    ResampleBox(src, b.x, b.y, b.w, b.h, opencv.data(), b.ow, b.oh, static_cast<size_t>(b.ow) * 3,
                Filter::kLinear, scratch);
    ExpectClose(ours, opencv, 1, 0.2, what);
  }
}

// Outputs of a batch row's size (224x224 floats, 600 KB) at an aligned
// address take the streaming-store path; it writes the same values.
TEST_F(ResizeLinearTest, StreamingStoresWriteTheSameValues) {
  const int w0 = 320, h0 = 260;
  const std::vector<uint8_t> pixels = SynthesizeImage(w0, h0, 66);
  const RgbImage src{pixels.data(), w0, h0};
  const ValueMap map = MakeValueMap(&kImageNetMean, &kImageNetStd);
  std::vector<uint8_t> scratch;
  for (DType dtype : {DType::kF32, DType::kF16}) {
    for (bool flip : {false, true}) {
      const OutputFormat format{dtype, true, flip, &map};
      const size_t bytes = size_t{224} * 224 * 3 * DTypeSize(dtype);
      // 32-byte aligned, as batch storage is.
      std::vector<uint8_t> storage(bytes + 32, 0xAB);
      uint8_t* fast = storage.data() + (32 - reinterpret_cast<uintptr_t>(storage.data()) % 32) % 32;
      std::vector<uint8_t> slow(bytes, 0xCD);
      ResizeLinearInto(src, 11, 7, 290, 240, 224, 224, format, fast, scratch);
      ResizeLinearIntoScalar(src, 11, 7, 290, 240, 224, 224, format, slow.data(), scratch);
      ASSERT_EQ(std::memcmp(fast, slow.data(), bytes), 0) << DTypeName(dtype) << " flip " << flip;
    }
  }
}

// A region decode hands the kernel the same pixels at another offset: the
// output must not depend on where the box sits.
TEST_F(ResizeLinearTest, OutputDoesNotDependOnTheBoxPosition) {
  const int w0 = 160, h0 = 120;
  const std::vector<uint8_t> pixels = SynthesizeImage(w0, h0, 63);
  const RgbImage src{pixels.data(), w0, h0};
  // The region [37, 37 + 101) x [29, 29 + 77) copied to the corner of a
  // smaller image.
  const int rw = 101, rh = 77;
  std::vector<uint8_t> region(static_cast<size_t>(rw) * rh * 3);
  for (int y = 0; y < rh; ++y) {
    std::copy_n(pixels.begin() + ((29 + y) * w0 + 37) * 3, rw * 3, region.begin() + y * rw * 3);
  }
  const RgbImage cut{region.data(), rw, rh};
  const ValueMap map = MakeValueMap(&kImageNetMean, &kImageNetStd);
  const OutputFormat format{DType::kF32, true, true, &map};
  std::vector<uint8_t> scratch;
  std::vector<float> a(3 * 64 * 48), b(3 * 64 * 48);
  ResizeLinearInto(src, 37, 29, rw, rh, 64, 48, format, a.data(), scratch);
  ResizeLinearInto(cut, 0, 0, rw, rh, 64, 48, format, b.data(), scratch);
  EXPECT_EQ(a, b);
}

// Each function sizes its own scratch, down to a single output pixel (ASan
// reports any write past it).
TEST_F(ResizeLinearTest, SizesItsOwnScratch) {
  const std::vector<uint8_t> pixels = SynthesizeImage(40, 30, 69);
  const RgbImage src{pixels.data(), 40, 30};
  for (const auto& [ow, oh] : {std::pair{1, 1}, std::pair{8, 1}, std::pair{1, 8}, std::pair{3, 2}}) {
    std::vector<uint8_t> fast(static_cast<size_t>(ow) * oh * 3), slow(fast.size());
    std::vector<uint8_t> scratch_a, scratch_b;  // fresh every time
    ResizeLinearInto(src, 2, 3, 30, 20, ow, oh, OutputFormat{}, fast.data(), scratch_a);
    ResizeLinearIntoScalar(src, 2, 3, 30, 20, ow, oh, OutputFormat{}, slow.data(), scratch_b);
    EXPECT_EQ(fast, slow) << ow << "x" << oh;
  }
}

// Reads stay inside the image: a box on the last pixels of the last row,
// in a buffer with nothing after it (ASan reports any overread).
TEST_F(ResizeLinearTest, ReadsNothingPastTheImage) {
  const int w0 = 37, h0 = 11;
  const std::vector<uint8_t> pixels = SynthesizeImage(w0, h0, 64);
  std::vector<uint8_t> exact(pixels);  // capacity == size
  exact.shrink_to_fit();
  const RgbImage src{exact.data(), w0, h0};
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> out(24 * 8 * 3);
  ResizeLinearInto(src, 0, 0, w0, h0, 24, 8, OutputFormat{}, out.data(), scratch);
  ResizeLinearInto(src, 20, 5, 17, 6, 24, 8, OutputFormat{}, out.data(), scratch);
  std::vector<uint8_t> slow(out.size());
  ResizeLinearIntoScalar(src, 20, 5, 17, 6, 24, 8, OutputFormat{}, slow.data(), scratch);
  EXPECT_EQ(out, slow);
}

}  // namespace
}  // namespace feedline::vision::internal
