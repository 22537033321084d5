#include "feedline/vision/photometric_distort.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

std::vector<uint8_t> Pixels(int n) {
  std::vector<uint8_t> p(static_cast<size_t>(n) * 3);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11);
  return p;
}

TEST(PhotometricDistort, ProbabilityZeroChangesNothing) {
  const Transform t = Transform::RandomPhotometricDistort({0.5, 1.5}, {0.5, 1.5}, {-0.05, 0.05},
                                                          {0.875, 1.125}, 0.0);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<uint8_t> p = Pixels(64);
    const std::vector<uint8_t> before = p;
    Rng rng(seed, 0, 0);
    ApplyPhotometricDistort({p.data(), 8, 8}, DrawPhotometricDistort(t, rng));
    EXPECT_EQ(p, before);
  }
}

TEST(PhotometricDistort, ChannelsArePermutedUniformly) {
  // Every step drawn (p = 1), the permutation among them.
  const Transform t =
      Transform::RandomPhotometricDistort({1, 1}, {1, 1}, {0, 0}, {1, 1}, /*p=*/1.0);
  std::map<std::array<int, 3>, int> seen;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    Rng rng(seed, 0, 0);
    PhotometricDistortParams params = DrawPhotometricDistort(t, rng);
    ++seen[params.channels];
    // Factors of 1 (hue 0) still round through torchvision's arithmetic;
    // left out, what is left is the permutation.
    params.brightness = params.contrast = params.saturation = params.hue = std::nullopt;
    std::vector<uint8_t> p = Pixels(16);
    const std::vector<uint8_t> before = p;
    ApplyPhotometricDistort({p.data(), 4, 4}, params);
    for (size_t i = 0; i < 16; ++i) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(p[i * 3 + c], before[i * 3 + params.channels[c]]);
      }
    }
  }
  ASSERT_EQ(seen.size(), 6u);
  for (const auto& [order, count] : seen) EXPECT_NEAR(count, 500, 90);
}

TEST(PhotometricDistort, EachAdjustmentIsDrawnWithProbabilityP) {
  const Transform t = Transform::RandomPhotometricDistort();  // p = 0.5
  int brightness = 0, contrast = 0, saturation = 0, hue = 0, first = 0, permuted = 0;
  const int n = 4000;
  for (uint64_t seed = 0; seed < n; ++seed) {
    Rng rng(seed, 0, 0);
    const PhotometricDistortParams p = DrawPhotometricDistort(t, rng);
    brightness += p.brightness.has_value();
    contrast += p.contrast.has_value();
    saturation += p.saturation.has_value();
    hue += p.hue.has_value();
    first += p.contrast_first;
    permuted += p.channels != std::array<int, 3>{0, 1, 2};
    if (p.brightness) EXPECT_TRUE(*p.brightness >= 0.875 && *p.brightness < 1.125);
    if (p.hue) EXPECT_TRUE(*p.hue >= -0.05 && *p.hue < 0.05);
  }
  for (int count : {brightness, contrast, saturation, hue, first}) EXPECT_NEAR(count, n / 2, 160);
  // Permuted: p = 0.5 times 5 of the 6 orders.
  EXPECT_NEAR(permuted, n * 5 / 12, 160);
}

TEST(PhotometricDistort, AppliesColorJittersAdjustmentsInTheReferencesOrder) {
  PhotometricDistortParams params;
  params.brightness = 1.1;
  params.contrast = 0.7;
  params.saturation = 1.3;
  params.contrast_first = false;
  std::vector<uint8_t> got = Pixels(64), want = got;
  ApplyPhotometricDistort({got.data(), 8, 8}, params);
  const RgbImageView view{want.data(), 8, 8};
  AdjustBrightness(view, 1.1);
  AdjustSaturation(view, 1.3);
  AdjustContrast(view, 0.7);
  EXPECT_EQ(got, want);
}

TEST(PhotometricDistort, BadArgumentsAreNamed) {
  EXPECT_THROW(Transform::RandomPhotometricDistort({-1, 1}), Error);
  EXPECT_THROW(Transform::RandomPhotometricDistort({0.5, 1.5}, {0.5, 1.5}, {-0.6, 0}), Error);
  EXPECT_THROW(
      Transform::RandomPhotometricDistort({0.5, 1.5}, {0.5, 1.5}, {0, 0}, {0.9, 1.1}, 1.5), Error);
}

}  // namespace
}  // namespace feedline::vision
