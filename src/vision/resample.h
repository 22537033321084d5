// Resampling a box of an RGB image to an output size. Whole-pixel boxes go
// to cv::resize, except area averaging by a fractional factor, which OpenCV
// does an order of magnitude slower than the separable filter here; that
// filter also takes boxes with sub-pixel edges.
#ifndef FEEDLINE_SRC_VISION_RESAMPLE_H_
#define FEEDLINE_SRC_VISION_RESAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace feedline::vision::internal {

enum class Filter : uint8_t {
  kLinear,   // bilinear, cv::INTER_LINEAR's sample positions
  kArea,     // pixel-area average, cv::INTER_AREA
  kNearest,  // the pixel under each output pixel's centre, cv::INTER_NEAREST_EXACT
};

struct RgbImage {
  const uint8_t* pixels = nullptr;  // rows of width * 3 bytes, packed
  int width = 0;
  int height = 0;
};

// A box in whole pixels.
struct PixelBox {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};

// The box [x, x + w) x [y, y + h) clamped to whole pixels of `src` (at
// least one), or nullopt if an edge is not within 1e-6 of a whole pixel.
std::optional<PixelBox> WholePixels(const RgbImage& src, double x, double y, double w, double h);

// Writes into `out` (out_height rows of out_width * 3 bytes, `out_stride`
// bytes apart) the box [x, x + w) x [y, y + h) of `src`, in source pixels,
// resampled with `filter`. REQUIRES: the box lies within src (up to rounding)
// and is at least a pixel wide and high. `buffer` is scratch.
void ResampleBox(const RgbImage& src, double x, double y, double w, double h, uint8_t* out,
                 int out_width, int out_height, size_t out_stride, Filter filter,
                 std::vector<uint8_t>& buffer);

}  // namespace feedline::vision::internal

#endif  // FEEDLINE_SRC_VISION_RESAMPLE_H_
