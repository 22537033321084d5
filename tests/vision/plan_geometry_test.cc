#include "feedline/vision/plan_geometry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace feedline::vision {
namespace {

using ::testing::ElementsAre;

// A plan showing source box (x, y, w, h) as an ow x oh output.
PipelinePlan MakePlan(double x, double y, double w, double h, int ow, int oh, bool flip = false) {
  PipelinePlan plan;
  plan.x = x;
  plan.y = y;
  plan.width = w;
  plan.height = h;
  plan.out_width = ow;
  plan.out_height = oh;
  plan.flip = flip;
  return plan;
}

TEST(PlanGeometry, BoxesFollowTheCropTheScaleAndTheMirror) {
  EXPECT_THAT(PlanGeometry(MakePlan(0, 0, 30, 20, 30, 20)).MapBox({2, 3, 12.5f, 7}),
              ElementsAre(2, 3, 12.5f, 7));
  // Mirrored: x becomes width - x, corners swapped.
  EXPECT_THAT(PlanGeometry(MakePlan(0, 0, 30, 20, 30, 20, true)).MapBox({2, 3, 12.5f, 7}),
              ElementsAre(17.5f, 3, 28, 7));
  // Cropped at (10, 5), then halved.
  EXPECT_THAT(PlanGeometry(MakePlan(10, 5, 20, 10, 10, 5)).MapBox({12, 7, 20, 11}),
              ElementsAre(1, 1, 5, 3));
  // Clipped to the output; wholly outside, it has no width.
  EXPECT_THAT(PlanGeometry(MakePlan(10, 5, 20, 10, 20, 10)).MapBox({0, 0, 15, 40}),
              ElementsAre(0, 0, 5, 10));
  const std::array<float, 4> outside = PlanGeometry(MakePlan(10, 5, 20, 10, 20, 10)).MapBox({0, 0, 5, 4});
  EXPECT_FALSE(outside[2] > outside[0]);
}

// Pixels set in a mask, as (row, column) pairs.
std::vector<std::pair<int, int>> MaskOnes(const std::vector<uint8_t>& mask, int width) {
  std::vector<std::pair<int, int>> out;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) out.emplace_back(static_cast<int>(i) / width, static_cast<int>(i) % width);
  }
  return out;
}

TEST(PlanGeometry, APolygonCoversThePixelsWhoseCentreItHolds) {
  // What pycocotools draws for this polygon in a 5x4 image: rows 1-3,
  // columns 1-2.
  std::vector<uint8_t> mask(5 * 4);
  PlanGeometry(MakePlan(0, 0, 4, 5, 4, 5)).FillPolygon(std::vector<double>{1, 1, 3, 1, 3, 4, 1, 4},
                                                     mask.data());
  EXPECT_THAT(MaskOnes(mask, 4), ElementsAre(std::pair(1, 1), std::pair(1, 2), std::pair(2, 1),
                                         std::pair(2, 2), std::pair(3, 1), std::pair(3, 2)));
  // Mirrored, and a second polygon of the same object adds to the first.
  std::vector<uint8_t> flipped(5 * 4);
  const PlanGeometry mirror(MakePlan(0, 0, 4, 5, 4, 5, true));
  mirror.FillPolygon(std::vector<double>{0, 0, 1, 0, 1, 1, 0, 1}, flipped.data());
  mirror.FillPolygon(std::vector<double>{1, 4, 2, 4, 2, 5, 1, 5}, flipped.data());
  EXPECT_THAT(MaskOnes(flipped, 4), ElementsAre(std::pair(0, 3), std::pair(4, 2)));
  // Doubled in size: a 2x2 square becomes 4x4.
  std::vector<uint8_t> big(10 * 8);
  PlanGeometry(MakePlan(0, 0, 4, 5, 8, 10)).FillPolygon(std::vector<double>{1, 1, 3, 1, 3, 3, 1, 3},
                                                      big.data());
  EXPECT_EQ(MaskOnes(big, 8).size(), 16u);
  EXPECT_EQ(MaskOnes(big, 8).front(), std::pair(2, 2));
  // A triangle, as pycocotools draws it.
  std::vector<uint8_t> triangle(4 * 4);
  PlanGeometry(MakePlan(0, 0, 4, 4, 4, 4)).FillPolygon(std::vector<double>{0, 0, 4, 0, 0, 4},
                                                     triangle.data());
  EXPECT_THAT(MaskOnes(triangle, 4),
              ElementsAre(std::pair(0, 0), std::pair(0, 1), std::pair(0, 2), std::pair(1, 0),
                          std::pair(1, 1), std::pair(2, 0)));
}

// What pycocotools 2.0.11 draws for each polygon (frPyObjects, decode, the
// union over an object's polygons, as the references' ConvertCocoPolysToMask
// takes it), recorded as the (row, column) of each pixel set: fractional
// vertices, two polygons of one object, and vertices outside the image.
std::vector<std::pair<int, int>> CocoDrawn(std::initializer_list<std::pair<int, int>> pixels) {
  return std::vector<std::pair<int, int>>(pixels);
}

TEST(PlanGeometry, APolygonIsTheMaskPycocotoolsDraws) {
  {
    std::vector<uint8_t> mask(9 * 10);
    const PlanGeometry same(MakePlan(0, 0, 10, 9, 10, 9));
    same.FillPolygon(std::vector<double>{1.1, 0.3, 7.9, 2.6, 6.2, 8.4, 0.5, 5.5}, mask.data());
    EXPECT_EQ(MaskOnes(mask, 10), CocoDrawn({{0, 1}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {2, 5}, {2, 6}, {2, 7}, {3, 1}, {3, 2}, {3, 3}, {3, 4}, {3, 5}, {3, 6}, {3, 7}, {4, 1}, {4, 2}, {4, 3}, {4, 4}, {4, 5}, {4, 6}, {5, 1}, {5, 2}, {5, 3}, {5, 4}, {5, 5}, {5, 6}, {6, 2}, {6, 3}, {6, 4}, {6, 5}, {6, 6}, {7, 4}, {7, 5}})) << "case 0";
  }
  {
    std::vector<uint8_t> mask(13 * 14);
    const PlanGeometry same(MakePlan(0, 0, 14, 13, 14, 13));
    same.FillPolygon(std::vector<double>{2.5, 2.5, 12.1, 3.1, 9.9, 11.7, 3.3, 9.2}, mask.data());
    same.FillPolygon(std::vector<double>{0.2, 0.2, 1.8, 0.2, 1.0, 1.9}, mask.data());
    EXPECT_EQ(MaskOnes(mask, 14), CocoDrawn({{0, 0}, {0, 1}, {3, 3}, {3, 4}, {3, 5}, {3, 6}, {3, 7}, {3, 8}, {3, 9}, {3, 10}, {3, 11}, {4, 3}, {4, 4}, {4, 5}, {4, 6}, {4, 7}, {4, 8}, {4, 9}, {4, 10}, {4, 11}, {5, 3}, {5, 4}, {5, 5}, {5, 6}, {5, 7}, {5, 8}, {5, 9}, {5, 10}, {5, 11}, {6, 3}, {6, 4}, {6, 5}, {6, 6}, {6, 7}, {6, 8}, {6, 9}, {6, 10}, {7, 3}, {7, 4}, {7, 5}, {7, 6}, {7, 7}, {7, 8}, {7, 9}, {7, 10}, {8, 3}, {8, 4}, {8, 5}, {8, 6}, {8, 7}, {8, 8}, {8, 9}, {8, 10}, {9, 4}, {9, 5}, {9, 6}, {9, 7}, {9, 8}, {9, 9}, {9, 10}, {10, 7}, {10, 8}, {10, 9}, {11, 9}})) << "case 1";
  }
  {
    std::vector<uint8_t> mask(8 * 7);
    const PlanGeometry same(MakePlan(0, 0, 7, 8, 7, 8));
    same.FillPolygon(std::vector<double>{-2.3, -1.0, 6.6, 4.4, -1.5, 9.8}, mask.data());
    EXPECT_EQ(MaskOnes(mask, 7), CocoDrawn({{1, 0}, {1, 1}, {2, 0}, {2, 1}, {2, 2}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}, {4, 0}, {4, 1}, {4, 2}, {4, 3}, {4, 4}, {4, 5}, {5, 0}, {5, 1}, {5, 2}, {5, 3}, {5, 4}, {6, 0}, {6, 1}, {6, 2}, {7, 0}, {7, 1}})) << "case 2";
  }
}

TEST(PlanGeometry, FarOrBrokenVerticesAreSafe) {
  std::vector<uint8_t> mask(4 * 4);
  const PlanGeometry same(MakePlan(0, 0, 4, 4, 4, 4));
  // A triangle far past the image covering its left half.
  same.FillPolygon(std::vector<double>{-1e30, -1e30, 2, -1e30, 2, 1e30}, mask.data());
  EXPECT_EQ(MaskOnes(mask, 4).size(), 8u);
  std::vector<uint8_t> none(4 * 4);
  same.FillPolygon(std::vector<double>{0, 0, NAN, 0, 4, 4}, none.data());
  same.FillPolygon(std::vector<double>{0, 0, INFINITY, 0, 4, 4}, none.data());
  same.FillPolygon(std::vector<double>{10, 10, 20, 10, 20, 20}, none.data());
  EXPECT_TRUE(MaskOnes(none, 4).empty());
}

TEST(PlanGeometry, ARunLengthMaskIsSampledAtTheOutputPixels) {
  // Rows 1-3 x columns 1-2 of a 5x4 image, in COCO's column-major runs.
  CocoRle rle{5, 4, {6, 3, 2, 3, 6}};
  std::vector<uint8_t> same(5 * 4);
  PlanGeometry(MakePlan(0, 0, 4, 5, 4, 5)).FillRle(rle, same.data());
  EXPECT_THAT(MaskOnes(same, 4), ElementsAre(std::pair(1, 1), std::pair(1, 2), std::pair(2, 1),
                                         std::pair(2, 2), std::pair(3, 1), std::pair(3, 2)));
  // The right half (columns 2-3), mirrored: source column 2 lands at 1.
  std::vector<uint8_t> half(5 * 2);
  PlanGeometry(MakePlan(2, 0, 2, 5, 2, 5, true)).FillRle(rle, half.data());
  EXPECT_THAT(MaskOnes(half, 2), ElementsAre(std::pair(1, 1), std::pair(2, 1), std::pair(3, 1)));
}

}  // namespace
}  // namespace feedline::vision
