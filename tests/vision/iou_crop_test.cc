#include "feedline/vision/iou_crop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

double Iou(const std::array<double, 4>& a, const CropBox& c) {
  const double cx0 = c.left, cy0 = c.top, cx1 = c.left + c.width, cy1 = c.top + c.height;
  const double w = std::max(std::min(a[2], cx1) - std::max(a[0], cx0), 0.0);
  const double h = std::max(std::min(a[3], cy1) - std::max(a[1], cy0), 0.0);
  const double inter = w * h;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + double{c.width} * c.height - inter);
}

bool CentreInside(const std::array<double, 4>& b, const CropBox& c) {
  const double cx = 0.5 * (b[0] + b[2]), cy = 0.5 * (b[1] + b[3]);
  return c.left < cx && cx < c.left + c.width && c.top < cy && cy < c.top + c.height;
}

TEST(RandomIoUCropBox, EveryCropHoldsACentredBoxWithTheDrawnOverlap) {
  const std::vector<std::array<double, 4>> boxes = {{10, 20, 60, 90}, {150, 30, 190, 70}};
  const Transform t = Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.5}, 40);
  int cropped = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Rng rng(seed, 0, 0);
    const std::optional<CropBox> crop = RandomIoUCropBox(120, 200, boxes, t, rng);
    if (!crop) continue;
    ++cropped;
    EXPECT_GE(crop->width, static_cast<int>(200 * 0.3));
    EXPECT_GE(crop->height, static_cast<int>(120 * 0.3));
    EXPECT_LE(crop->left + crop->width, 200);
    EXPECT_LE(crop->top + crop->height, 120);
    const double aspect = double{crop->width} / crop->height;
    EXPECT_TRUE(aspect >= 0.5 && aspect <= 2.0) << aspect;
    double best = 0;
    for (const auto& b : boxes) {
      if (CentreInside(b, *crop)) best = std::max(best, Iou(b, *crop));
    }
    EXPECT_GE(best, 0.5) << seed;
  }
  EXPECT_GT(cropped, 250);  // options without 1: a crop unless 1000 draws all fail
}

TEST(RandomIoUCropBox, AnOptionOfOneOrNoBoxesLeavesTheImage) {
  Rng rng(7, 0, 0);
  const std::vector<std::array<double, 4>> boxes = {{10, 20, 60, 90}};
  EXPECT_FALSE(RandomIoUCropBox(120, 200, boxes, Transform::RandomIoUCrop({0.3, 1}, {0.5, 2}, {1.0}),
                                rng));
  // torchvision's would loop until it drew 1; no boxes can never crop.
  EXPECT_FALSE(RandomIoUCropBox(120, 200, {}, Transform::RandomIoUCrop({0.3, 1}, {0.5, 2}, {0.0}),
                                rng));
}

TEST(RandomIoUCropBox, OptionsAreDrawnEvenly) {
  // Options {0, 1}: half the draws leave the image (option 1), the other
  // half crop at once (IoU 0 with a box that covers the image).
  const std::vector<std::array<double, 4>> boxes = {{0, 0, 200, 120}};
  const Transform t = Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.0, 1.0});
  int cropped = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    Rng rng(seed, 0, 0);
    cropped += RandomIoUCropBox(120, 200, boxes, t, rng).has_value();
  }
  // The first draw decides: 1 ends the call, 0 crops. Binomial(2000, 1/2).
  EXPECT_NEAR(cropped, 1000, 120);
}

TEST(RandomIoUCropBox, SameRngSameCrop) {
  const std::vector<std::array<double, 4>> boxes = {{10, 20, 60, 90}, {150, 30, 190, 70}};
  const Transform t = Transform::RandomIoUCrop();
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Rng a(seed, 0, 0), b(seed, 0, 0);
    EXPECT_EQ(RandomIoUCropBox(120, 200, boxes, t, a), RandomIoUCropBox(120, 200, boxes, t, b));
  }
}

TEST(RandomIoUCropTransform, BadArgumentsAreNamed) {
  EXPECT_THROW(Transform::RandomIoUCrop({0.0, 1.0}), Error);
  EXPECT_THROW(Transform::RandomIoUCrop({0.3, 1.5}), Error);
  EXPECT_THROW(Transform::RandomIoUCrop({0.3, 1.0}, {2.0, 0.5}), Error);
  EXPECT_THROW(Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {}), Error);
  EXPECT_THROW(Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.5}, 0), Error);
  try {
    Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.5}, 0);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("random_iou_crop: trials"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace feedline::vision
