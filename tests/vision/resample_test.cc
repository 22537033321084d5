#include "src/vision/resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "feedline/vision/synth.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision::internal {
namespace {

// Straightforward floating-point references of the three filters, over the
// box (x, y, w, h) of a w0 x h0 RGB image.
std::vector<uint8_t> Reference(const std::vector<uint8_t>& src, int w0, int h0, double x, double y,
                               double w, double h, int ow, int oh, Filter filter) {
  std::vector<uint8_t> out(static_cast<size_t>(ow) * oh * 3);
  const double sx = w / ow, sy = h / oh;
  const int px0 = static_cast<int>(std::floor(x + 1e-6));
  const int px1 = std::min(w0, static_cast<int>(std::ceil(x + w - 1e-6))) - 1;
  const int py0 = static_cast<int>(std::floor(y + 1e-6));
  const int py1 = std::min(h0, static_cast<int>(std::ceil(y + h - 1e-6))) - 1;
  auto at = [&](int xx, int yy, int c) {
    xx = std::clamp(xx, px0, px1);
    yy = std::clamp(yy, py0, py1);
    return static_cast<double>(src[(static_cast<size_t>(yy) * w0 + xx) * 3 + c]);
  };
  for (int oy = 0; oy < oh; ++oy) {
    for (int ox = 0; ox < ow; ++ox) {
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        if (filter == Filter::kNearest) {
          v = at(static_cast<int>(std::floor(x + (ox + 0.5) * sx)),
                 static_cast<int>(std::floor(y + (oy + 0.5) * sy)), c);
        } else if (filter == Filter::kLinear) {
          const double cx = x + (ox + 0.5) * sx - 0.5, cy = y + (oy + 0.5) * sy - 0.5;
          const int ix = static_cast<int>(std::floor(cx)), iy = static_cast<int>(std::floor(cy));
          const double ax = cx - ix, ay = cy - iy;
          v = (1 - ay) * ((1 - ax) * at(ix, iy, c) + ax * at(ix + 1, iy, c)) +
              ay * ((1 - ax) * at(ix, iy + 1, c) + ax * at(ix + 1, iy + 1, c));
        } else {  // area: integrate the box of the output pixel
          const double x0 = x + ox * sx, x1 = x0 + sx, y0 = y + oy * sy, y1 = y0 + sy;
          for (int yy = static_cast<int>(std::floor(y0)); yy < y1 - 1e-9; ++yy) {
            const double fy = std::min(y1, yy + 1.0) - std::max(y0, double(yy));
            for (int xx = static_cast<int>(std::floor(x0)); xx < x1 - 1e-9; ++xx) {
              const double fx = std::min(x1, xx + 1.0) - std::max(x0, double(xx));
              v += fx * fy * at(xx, yy, c);
            }
          }
          v /= sx * sy;
        }
        out[(static_cast<size_t>(oy) * ow + ox) * 3 + c] =
            static_cast<uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
      }
    }
  }
  return out;
}

struct Case {
  double x, y, w, h;
  int ow, oh;
  Filter filter;
};

TEST(ResampleBox, MatchesTheReferenceFilters) {
  const int w0 = 160, h0 = 120;
  const std::vector<uint8_t> src = SynthesizeImage(w0, h0, 41);
  const RgbImage image{src.data(), w0, h0};
  std::vector<uint8_t> buffer;
  const Case cases[] = {
      // Fractional boxes (our separable filter).
      {10.25, 7.5, 100.5, 80.25, 50, 40, Filter::kArea},
      {0.5, 0.5, 150.75, 110.5, 64, 48, Filter::kArea},
      {3.3, 2.7, 90.6, 70.1, 120, 90, Filter::kLinear},
      {20.5, 10.5, 60.0, 60.0, 45, 45, Filter::kLinear},
      {5.5, 5.5, 30.2, 20.7, 64, 40, Filter::kLinear},  // enlarging
      {1.5, 2.5, 100.0, 80.0, 33, 21, Filter::kNearest},
      // Whole-pixel boxes (cv::resize).
      {10, 20, 100, 80, 50, 40, Filter::kArea},
      {0, 0, 160, 120, 70, 50, Filter::kArea},
      {7, 3, 120, 90, 100, 80, Filter::kLinear},
      {0, 0, 40, 30, 100, 75, Filter::kLinear},
      {4, 4, 99, 77, 33, 21, Filter::kNearest},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> out(static_cast<size_t>(c.ow) * c.oh * 3);
    ResampleBox(image, c.x, c.y, c.w, c.h, out.data(), c.ow, c.oh, static_cast<size_t>(c.ow) * 3,
                c.filter, buffer);
    const std::vector<uint8_t> expected =
        Reference(src, w0, h0, c.x, c.y, c.w, c.h, c.ow, c.oh, c.filter);
    // OpenCV computes in fixed point: allow rounding, not misplacement.
    EXPECT_LT(testing::MeanAbsDiff(out, expected), 0.6)
        << c.x << "," << c.y << " " << c.w << "x" << c.h << " -> " << c.ow << "x" << c.oh
        << " filter " << static_cast<int>(c.filter);
  }
}

TEST(ResampleBox, WritesWithTheOutputStride) {
  const std::vector<uint8_t> src = SynthesizeImage(64, 64, 42);
  const RgbImage image{src.data(), 64, 64};
  std::vector<uint8_t> buffer;
  const int stride = 40 * 3;
  std::vector<uint8_t> out(static_cast<size_t>(stride) * 20, 7);
  ResampleBox(image, 0.5, 0.5, 60.0, 40.0, out.data(), 30, 20, stride, Filter::kArea, buffer);
  for (int y = 0; y < 20; ++y) {
    for (int x = 30 * 3; x < stride; ++x) ASSERT_EQ(out[y * stride + x], 7) << "wrote past width";
  }
}

TEST(ResampleBox, NearlyWholeBoxesTakeTheWholePixelPath) {
  const std::vector<uint8_t> src = SynthesizeImage(90, 70, 43);
  const RgbImage image{src.data(), 90, 70};
  std::vector<uint8_t> buffer;
  std::vector<uint8_t> a(40 * 30 * 3), b(40 * 30 * 3);
  ResampleBox(image, 10, 5, 80, 60, a.data(), 40, 30, 120, Filter::kArea, buffer);
  ResampleBox(image, 10 + 1e-9, 5 - 1e-9, 80, 60 + 1e-9, b.data(), 40, 30, 120, Filter::kArea,
              buffer);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace feedline::vision::internal
