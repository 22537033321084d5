#include "src/vision/resample.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "feedline/synth/synth.h"
#include "tests/vision/resample_reference.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision::internal {
namespace {

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
        ResampleReference(src, w0, h0, c.x, c.y, c.w, c.h, c.ow, c.oh, c.filter);
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
