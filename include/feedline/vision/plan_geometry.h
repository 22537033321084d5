// Annotations that follow an image through its PipelinePlan: boxes, polygons
// and run-length masks given in the source image's pixels, mapped to the
// pipeline's output pixels by the same source box, scale and mirror the
// pixels went through (Pipeline::Run's plan_used).
//
// Coordinates are continuous: pixel (u, v) covers [u, u + 1) x [v, v + 1),
// so a box from 0 to the image's width covers the whole image. A polygon is
// rasterized once, at the output size, by COCO's own rule (pycocotools'
// frPyObjects: the outline traced on a grid 5 times finer, a pixel inside
// when the outline crosses its column's centre an odd number of times
// above it, counted in column-major order): at the image's own size the
// mask is the one pycocotools draws, bit for bit, and a mirror flips the
// drawn mask as it flips the pixels. A run-length mask is sampled at the
// output pixels' centres (nearest).
//
// Thread safety: pure functions.
#ifndef FEEDLINE_VISION_PLAN_GEOMETRY_H_
#define FEEDLINE_VISION_PLAN_GEOMETRY_H_

#include <array>
#include <cstdint>
#include <span>

#include "feedline/export.h"
#include "feedline/vision/coco.h"
#include "feedline/vision/pipeline.h"

namespace feedline::vision {

class FEEDLINE_EXPORT PlanGeometry {
 public:
  explicit PlanGeometry(const PipelinePlan& plan);

  int out_width() const { return plan_.out_width; }
  int out_height() const { return plan_.out_height; }

  // Box (x0, y0, x1, y1) in source pixels to output pixels, clipped to the
  // output; its width or height is 0 or less when none of it is visible.
  std::array<float, 4> MapBox(const std::array<float, 4>& box) const;
  // Point (x, y) in source pixels to output pixels (not clipped).
  std::array<double, 2> MapPoint(double x, double y) const;

  // Sets to 1 the pixels of `mask` (uint8 [out_height, out_width],
  // row-major) inside polygon `xy` (x0, y0, x1, y1, ... in source pixels);
  // others are left as they are, so polygons of one object add up (their
  // union, as the references' ConvertCocoPolysToMask takes it).
  void FillPolygon(std::span<const double> xy, uint8_t* mask) const;
  // Sets to 1 the pixels of `mask` whose centre maps into a 1 of `rle` (a
  // mask of the source image's size).
  void FillRle(const CocoRle& rle, uint8_t* mask) const;

 private:
  PipelinePlan plan_;
  double sx_, sy_;  // output pixels per source pixel
};

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_PLAN_GEOMETRY_H_
