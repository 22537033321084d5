#include "feedline/vision/random_hsv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

using ::testing::HasSubstr;

TEST(RandomHsv, DrawsNothingWithoutGains) {
  Rng rng(1, 2, 3), untouched(1, 2, 3);
  EXPECT_EQ(DrawRandomHsv(Transform::RandomHSV(0, 0, 0), rng).factors,
            (std::array<double, 3>{1, 1, 1}));
  EXPECT_EQ(rng.NextU64(), untouched.NextU64());
}

TEST(RandomHsv, DrawsOneFactorForEachChannelWithinItsGain) {
  const Transform hsv = Transform::RandomHSV(0.015, 0.7, 0.4);
  for (uint64_t i = 0; i < 200; ++i) {
    Rng rng(0, 0, i), replay(0, 0, i);
    const RandomHsvParams p = DrawRandomHsv(hsv, rng);
    EXPECT_DOUBLE_EQ(p.factors[0], 1 + 0.015 * replay.Uniform(-1, 1));
    EXPECT_DOUBLE_EQ(p.factors[1], 1 + 0.7 * replay.Uniform(-1, 1));
    EXPECT_DOUBLE_EQ(p.factors[2], 1 + 0.4 * replay.Uniform(-1, 1));
  }
}

// One pixel through ApplyRandomHsv.
std::vector<uint8_t> HsvOfPixel(std::vector<uint8_t> rgb, std::array<double, 3> r) {
  ApplyRandomHsv(RgbImageView{rgb.data(), 1, 1}, RandomHsvParams{r});
  return rgb;
}

TEST(RandomHsv, ScalesHueSaturationAndValueAsUltralytics) {
  using Rgb = std::vector<uint8_t>;
  // Hue in OpenCV's 8-bit levels (green 60, cyan 90, red 0), modulo 180.
  EXPECT_EQ(HsvOfPixel({0, 255, 0}, {1.5, 1, 1}), (Rgb{0, 255, 255}));
  EXPECT_EQ(HsvOfPixel({0, 255, 0}, {3, 1, 1}), (Rgb{255, 0, 0}));
  // Saturation to 0: white; value halved and truncated.
  EXPECT_EQ(HsvOfPixel({255, 0, 0}, {1, 0, 1}), (Rgb{255, 255, 255}));
  EXPECT_EQ(HsvOfPixel({255, 0, 0}, {1, 1, 0.5}), (Rgb{127, 0, 0}));
  // Clipped at 255.
  EXPECT_EQ(HsvOfPixel({200, 0, 0}, {1, 1, 1.5}), (Rgb{255, 0, 0}));
  // The grey stays grey, its value scaled and truncated, whatever the hue
  // and saturation factors.
  EXPECT_EQ(HsvOfPixel({114, 114, 114}, {1.2, 1.5, 0.5}), (Rgb{57, 57, 57}));
  // Factors of 1 leave any pixel as it is.
  EXPECT_EQ(HsvOfPixel({30, 90, 200}, {1, 1, 1}), (Rgb{30, 90, 200}));
}

TEST(RandomHsv, GainsOutsideZeroToOneAreRefusedNamingThem) {
  try {
    Transform::RandomHSV(0.015, 1.5, 0.4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("random_hsv: sgain must be in [0, 1], got 1.5"));
  }
  EXPECT_THROW(Transform::RandomHSV(-0.1), Error);
  EXPECT_THROW(Transform::RandomHSV(0.015, 0.7, NAN), Error);
}

TEST(RandomHsv, ItsTextFormRoundTrips) {
  EXPECT_EQ(Transform::RandomHSV().ToString(), "random_hsv");
  const Transform t = Transform::RandomHSV(0.1, 0.2, 0.3);
  EXPECT_EQ(t.ToString(), "random_hsv(hgain=0.1,sgain=0.2,vgain=0.3)");
  const std::vector<Transform> parsed = ParseTransforms(t.ToString());
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].hue, t.hue);
  EXPECT_EQ(parsed[0].saturation, t.saturation);
  EXPECT_EQ(parsed[0].brightness, t.brightness);
  EXPECT_TRUE(t.IsPixelAugmentation());
}

}  // namespace
}  // namespace feedline::vision
