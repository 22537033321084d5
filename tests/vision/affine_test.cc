// InverseAffineMatrix (torchvision's _get_inverse_affine_matrix) and Affine,
// on maps whose results are exact: the identity, a half turn, a shift.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "feedline/vision/image_ops.h"

namespace feedline::vision {
namespace {

constexpr double kTolerance = 1e-9;

std::vector<uint8_t> Ramp(int height, int width) {
  std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 % 251);
  return pixels;
}

uint8_t At(const std::vector<uint8_t>& pixels, int width, int y, int x, int c) {
  return pixels[(static_cast<size_t>(y) * width + x) * 3 + c];
}

TEST(InverseAffineMatrix, IdentityForNoChange) {
  const auto m = InverseAffineMatrix({0, 0}, 0, {0, 0}, 1.0, {0, 0});
  const std::array<double, 6> identity = {1, 0, 0, 0, 1, 0};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(m[i], identity[i], kTolerance) << i;
}

TEST(InverseAffineMatrix, InvertsScaleAndTranslation) {
  // Output = 2 * input + (3, -4): the inverse halves and shifts back.
  const auto m = InverseAffineMatrix({0, 0}, 0, {3, -4}, 2.0, {0, 0});
  EXPECT_NEAR(m[0], 0.5, kTolerance);
  EXPECT_NEAR(m[1], 0.0, kTolerance);
  EXPECT_NEAR(m[2], -1.5, kTolerance);
  EXPECT_NEAR(m[3], 0.0, kTolerance);
  EXPECT_NEAR(m[4], 0.5, kTolerance);
  EXPECT_NEAR(m[5], 2.0, kTolerance);
}

TEST(InverseAffineMatrix, AHalfTurnNegatesBothAxes) {
  const auto m = InverseAffineMatrix({0, 0}, 180, {0, 0}, 1.0, {0, 0});
  EXPECT_NEAR(m[0], -1, kTolerance);
  EXPECT_NEAR(m[1], 0, kTolerance);
  EXPECT_NEAR(m[3], 0, kTolerance);
  EXPECT_NEAR(m[4], -1, kTolerance);
}

TEST(Affine, TheIdentityKeepsThePixels) {
  const std::vector<uint8_t> original = Ramp(6, 5);
  std::vector<uint8_t> pixels = original;
  std::vector<uint8_t> scratch;
  for (const Interpolation interpolation : {Interpolation::kNearest, Interpolation::kBilinear}) {
    Affine({pixels.data(), 6, 5}, InverseAffineMatrix({0, 0}, 0, {0, 0}, 1.0, {0, 0}),
           interpolation, {0, 0, 0}, scratch);
    EXPECT_EQ(pixels, original);
  }
}

TEST(Affine, AHalfTurnAboutTheCentreMirrorsBothAxes) {
  const int h = 4, w = 6;
  const std::vector<uint8_t> original = Ramp(h, w);
  std::vector<uint8_t> pixels = original;
  std::vector<uint8_t> scratch;
  Affine({pixels.data(), h, w}, InverseAffineMatrix({0, 0}, 180, {0, 0}, 1.0, {0, 0}),
         Interpolation::kNearest, {0, 0, 0}, scratch);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(At(pixels, w, y, x, c), At(original, w, h - 1 - y, w - 1 - x, c))
            << y << "," << x << "," << c;
      }
    }
  }
}

TEST(Affine, PixelsFromOutsideTheImageAreTheFill) {
  const int h = 3, w = 4;
  const std::vector<uint8_t> original = Ramp(h, w);
  std::vector<uint8_t> pixels = original;
  std::vector<uint8_t> scratch;
  // Shift right by one pixel: column 0 comes from outside.
  Affine({pixels.data(), h, w}, InverseAffineMatrix({0, 0}, 0, {1, 0}, 1.0, {0, 0}),
         Interpolation::kNearest, {9, 8, 7}, scratch);
  for (int y = 0; y < h; ++y) {
    EXPECT_EQ(At(pixels, w, y, 0, 0), 9);
    EXPECT_EQ(At(pixels, w, y, 0, 1), 8);
    EXPECT_EQ(At(pixels, w, y, 0, 2), 7);
    for (int x = 1; x < w; ++x) {
      for (int c = 0; c < 3; ++c) EXPECT_EQ(At(pixels, w, y, x, c), At(original, w, y, x - 1, c));
    }
  }
}

}  // namespace
}  // namespace feedline::vision
