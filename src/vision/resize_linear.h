// Bilinear resampling of a whole-pixel box of packed RGB pixels, written
// straight into the output tensor with its flip, value mapping and layout:
// the hot path of the train and val recipes, in one pass.
//
// cv::resize followed by WriteOutput goes through memory twice (a u8 image,
// then the float planes) and OpenCV's three-channel bilinear filter is not
// vectorized well; this kernel reads each decoded row once and writes each
// output value once, about twice as fast (bench/vision_decode_benchmark).
//
// The arithmetic, identical in the vector and scalar versions:
//   taps     output o of n over a box edge of length L samples at
//            c = (o + 0.5) * L / n - 0.5 (cv::INTER_LINEAR's positions),
//            between pixels clamp(floor(c)) and clamp(floor(c) + 1), weight
//            w = float(c - floor(c)); positions are relative to the box, so a
//            region decode and a full decode give the same bytes.
//   filter   h = fmaf(wx, b - a, a) along the row, then
//            v = fmaf(wy, h1 - h0, h0) across rows, both in float.
//   rounding q = floor(v + 0.5) clamped to [0, 255]: the level the u8 output
//            holds; float outputs map q as WriteOutput does (ValueMap), so
//            f32 = Normalize(u8) exactly, as with torchvision's ToTensor.
#ifndef FEEDLINE_SRC_VISION_RESIZE_LINEAR_H_
#define FEEDLINE_SRC_VISION_RESIZE_LINEAR_H_

#include <cstdint>
#include <vector>

#include "feedline/tensor.h"
#include "src/vision/resample.h"
#include "src/vision/write_output.h"

namespace feedline::vision::internal {

// How the resized image lands in the destination tensor.
struct OutputFormat {
  DType dtype = DType::kU8;  // u8, f16 or f32
  bool chw = false;          // [3, h, w] instead of [h, w, 3]
  bool flip = false;         // mirrored left-right
  const ValueMap* map = nullptr;
  // For a destination inside a larger image (a mosaic's tile): pixels from
  // one row's start to the next's (0: the output's width), and with chw,
  // values from one plane's start to the next's (0: rows x height).
  size_t row_stride = 0;
  size_t plane_stride = 0;
};

// The box [x, x + w) x [y, y + h) of `src` (whole pixels, within the image)
// resized to out_width x out_height into `dst`, a tensor of that size in
// `format` (dense unless its strides say otherwise). `scratch` is reused between calls. REQUIRES:
// LinearResizeIsVectorized(), w, h, out_width, out_height >= 1.
void ResizeLinearInto(const RgbImage& src, int x, int y, int w, int h, int out_width,
                      int out_height, const OutputFormat& format, void* dst,
                      std::vector<uint8_t>& scratch);

// The same arithmetic one value at a time: the reference for tests.
void ResizeLinearIntoScalar(const RgbImage& src, int x, int y, int w, int h, int out_width,
                            int out_height, const OutputFormat& format, void* dst,
                            std::vector<uint8_t>& scratch);

// True where ResizeLinearInto has its vector path (x86-64 with AVX2 + FMA);
// elsewhere the pipeline resizes with OpenCV and writes with WriteOutput.
bool LinearResizeIsVectorized();

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_RESIZE_LINEAR_H_
