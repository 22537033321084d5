#include "feedline/vision/random_hsv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "feedline/error.h"
#include "feedline/rng.h"
#include "src/vision/augment.h"
#include "src/vision/opencv.h"

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

TEST(RandomHsv, ShiftsHueAndScalesSaturationAndValueAsUltralytics) {
  using Rgb = std::vector<uint8_t>;
  // Hue in OpenCV's 8-bit levels (green 60), shifted by (factor - 1) * 180
  // levels modulo 180, as Ultralytics 8.3.79 and later: to 150 (magenta:
  // its blue 254, as OpenCV's vectorized HSV2RGB gives it, 150 * (6 / 180)
  // in float being a hair past 5 and the product truncated) and to 15
  // (orange, green half way up, truncated).
  EXPECT_EQ(HsvOfPixel({0, 255, 0}, {1.5, 1, 1}), (Rgb{255, 0, 254}));
  EXPECT_EQ(HsvOfPixel({0, 255, 0}, {0.75, 1, 1}), (Rgb{255, 127, 0}));
  // A whole turn either way leaves the hue.
  EXPECT_EQ(HsvOfPixel({0, 255, 0}, {2, 1, 1}), (Rgb{0, 255, 0}));
  EXPECT_EQ(HsvOfPixel({0, 255, 0}, {0, 1, 1}), (Rgb{0, 255, 0}));
  // Saturation to 0: white; value halved and truncated; value to 0: black.
  EXPECT_EQ(HsvOfPixel({255, 0, 0}, {1, 0, 1}), (Rgb{255, 255, 255}));
  EXPECT_EQ(HsvOfPixel({255, 0, 0}, {1, 1, 0.5}), (Rgb{127, 0, 0}));
  EXPECT_EQ(HsvOfPixel({30, 90, 200}, {1.3, 1.6, 0}), (Rgb{0, 0, 0}));
  // Clipped at 255.
  EXPECT_EQ(HsvOfPixel({200, 0, 0}, {1, 1, 1.5}), (Rgb{255, 0, 0}));
  // The grey stays grey, its value scaled and truncated, whatever the hue
  // and saturation factors.
  EXPECT_EQ(HsvOfPixel({114, 114, 114}, {1.2, 1.5, 0.5}), (Rgb{57, 57, 57}));
  // Factors of 1 leave any pixel as it is.
  EXPECT_EQ(HsvOfPixel({30, 90, 200}, {1, 1, 1}), (Rgb{30, 90, 200}));
}

// Ultralytics' RandomHSV on `rgb` (its 8.4 tables; OpenCV's hue and
// channel order differ from its BGR only by the channels' names).
void UltralyticsHsv(std::vector<uint8_t>& rgb, int height, int width,
                    const std::array<double, 3>& r) {
  cv::Mat lut(1, 256, CV_8UC3);
  for (int x = 0; x < 256; ++x) {
    cv::Vec3b& entry = lut.at<cv::Vec3b>(0, x);
    double hue = std::fmod(x + (r[0] - 1) * 180, 180.0);
    if (hue < 0) hue += 180;
    entry[0] = static_cast<uint8_t>(hue);
    entry[1] = static_cast<uint8_t>(std::clamp(x * r[1], 0.0, 255.0));
    entry[2] = static_cast<uint8_t>(std::clamp(x * r[2], 0.0, 255.0));
  }
  cv::Mat image(height, width, CV_8UC3, rgb.data()), hsv;
  cv::cvtColor(image, hsv, cv::COLOR_RGB2HSV);
  cv::LUT(hsv, lut, hsv);
  cv::cvtColor(hsv, image, cv::COLOR_HSV2RGB);
}

struct HsvDifference {
  int max = 0;
  double mean = 0;       // signed, ours - theirs
  double differing = 0;  // the fraction of values that differ
};

HsvDifference CompareHsv(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& theirs) {
  HsvDifference d;
  int64_t sum = 0, differing = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const int delta = ours[i] - theirs[i];
    d.max = std::max(d.max, std::abs(delta));
    sum += delta;
    differing += delta != 0;
  }
  d.mean = static_cast<double>(sum) / static_cast<double>(ours.size());
  d.differing = static_cast<double>(differing) / static_cast<double>(ours.size());
  return d;
}

std::vector<uint8_t> RandomHsvImage(int height, int width, uint64_t seed) {
  Rng rng(seed, 0, 0);
  std::vector<uint8_t> rgb(static_cast<size_t>(height) * width * 3);
  for (uint8_t& x : rgb) x = static_cast<uint8_t>(rng.NextU64() >> 56);
  return rgb;
}

// The one pass computes OpenCV's 8-bit HSV, the tables and OpenCV's
// vectorized HSV2RGB (its AVX2 build's arithmetic, which truncates): on
// rows of a multiple of 32 pixels, all of which OpenCV's vector loop
// converts, the bytes are OpenCV's (measured: every one, 2026-12-07,
// OpenCV 4.6; a build whose float arithmetic differs would differ by a
// level now and then, which the bounds allow).
TEST(RandomHsv, MatchesOpenCvsThreeStepsOnRandomImages) {
  const Transform hsv = Transform::RandomHSV(0.5, 1, 1);
  const int sizes[][2] = {{640, 640}, {61, 96}, {3, 1024}};
  for (uint64_t i = 0; i < 18; ++i) {
    const int height = sizes[i % 3][0], width = sizes[i % 3][1];
    Rng rng(7, 0, i);
    const RandomHsvParams params = DrawRandomHsv(hsv, rng);
    std::vector<uint8_t> ours = RandomHsvImage(height, width, i), theirs = ours;
    ApplyRandomHsv(RgbImageView{ours.data(), height, width}, params);
    UltralyticsHsv(theirs, height, width, params.factors);
    const HsvDifference d = CompareHsv(ours, theirs);
    SCOPED_TRACE(::testing::Message() << height << "x" << width << " factors "
                                      << params.factors[0] << " " << params.factors[1] << " "
                                      << params.factors[2]);
    EXPECT_LE(d.max, 1);
    EXPECT_LE(std::abs(d.mean), 0.001);
    EXPECT_LE(d.differing, 0.001);
  }
}

// On rows shorter than 32 pixels OpenCV converts back with its scalar
// loop, which rounds where ours truncates: ours are then at most a level
// lower, by half a level on average at most.
TEST(RandomHsv, IsAtMostALevelUnderOpenCvsScalarLoop) {
  const Transform hsv = Transform::RandomHSV(0.5, 1, 1);
  for (uint64_t i = 0; i < 8; ++i) {
    const int height = 5, width = 7;
    Rng rng(8, 0, i);
    const RandomHsvParams params = DrawRandomHsv(hsv, rng);
    std::vector<uint8_t> ours = RandomHsvImage(height, width, i), theirs = ours;
    ApplyRandomHsv(RgbImageView{ours.data(), height, width}, params);
    UltralyticsHsv(theirs, height, width, params.factors);
    for (size_t k = 0; k < ours.size(); ++k) {
      EXPECT_TRUE(ours[k] == theirs[k] || ours[k] + 1 == theirs[k])
          << "value " << k << ": ours " << int(ours[k]) << ", OpenCV's " << int(theirs[k]);
    }
  }
}

// Grey pixels (every level), the primaries and secondaries at full and
// partial value, hues either side of the wrap, under factors at and past
// the gains' ends (0: grey or black; 2: clipped), against OpenCV's. (Hue
// factors whose shift is no whole level: at a whole level, the last bit of
// factor - 1 decides where the tables truncate.)
TEST(RandomHsv, MatchesOpenCvsThreeStepsOnEdgeCases) {
  std::vector<uint8_t> image;
  for (int v = 0; v < 256; ++v) image.insert(image.end(), {uint8_t(v), uint8_t(v), uint8_t(v)});
  for (int v : {1, 2, 114, 254, 255}) {
    const auto x = static_cast<uint8_t>(v), half = static_cast<uint8_t>(v / 2);
    const std::vector<uint8_t> colours = {x, 0, 0, 0, x, 0, 0, 0, x, x, x, 0, 0, x, x, x, 0, x,
                                          x, 0, 1, x, 1, 0, x, half, 0, x, 0, half, 1, 0, 0};
    image.insert(image.end(), colours.begin(), colours.end());
  }
  // A whole number of rows of 32 pixels (OpenCV's vector loop converts
  // them all).
  while (image.size() % 96 != 0) image.push_back(200);
  const int width = 32, height = static_cast<int>(image.size() / 96);
  const std::array<double, 3> factor_sets[] = {
      {1, 0, 1},   {1, 1, 0},     {1, 2, 2},      {0, 1, 1},      {2, 1, 1},   {1.5, 0.5, 1.5},
      {0.5, 2, 0}, {1.01, 1, 1},  {0.99, 1, 1.2}, {1.93, 0.3, 0.7}, {0.13, 1.7, 1}};
  // And a factor whose float product truncates differently from the
  // double one for some level (the vector loop then multiplies in double).
  double uneven = 0;
  for (int k = 1; uneven == 0; ++k) {
    const double g = 0.5 + k * 1e-4;
    for (int x = 0; x < 256; ++x) {
      if (static_cast<int>(static_cast<float>(x) * static_cast<float>(g)) !=
          static_cast<int>(x * g)) {
        uneven = g;
      }
    }
  }
  std::vector<std::array<double, 3>> all(std::begin(factor_sets), std::end(factor_sets));
  all.push_back({1.21, 1, uneven});
  all.push_back({0.81, uneven, 1});
  for (const std::array<double, 3>& factors : all) {
    std::vector<uint8_t> ours = image, theirs = image;
    ApplyRandomHsv(RgbImageView{ours.data(), height, width}, RandomHsvParams{factors});
    UltralyticsHsv(theirs, height, width, factors);
    const HsvDifference d = CompareHsv(ours, theirs);
    SCOPED_TRACE(::testing::Message() << "factors " << factors[0] << " " << factors[1] << " "
                                      << factors[2]);
    EXPECT_LE(d.max, 1);
    EXPECT_LE(d.differing, 0.01);
    // Greys stay grey.
    for (int v = 0; v < 256; ++v) {
      EXPECT_EQ(ours[3 * v], ours[3 * v + 1]);
      EXPECT_EQ(ours[3 * v], ours[3 * v + 2]);
    }
  }
}

// The vector loop (8 pixels a step, greys by their own path) and the
// one-pixel path give the same bytes: every pixel of an image converted
// alone, as a 1 x 1 image.
TEST(RandomHsv, EveryPixelAloneGivesTheSameBytes) {
  const int height = 37, width = 53;
  std::vector<uint8_t> image = RandomHsvImage(height, width, 99);
  // Four rows of greys, every level.
  for (int i = 0; i < 4 * width; ++i) {
    image[3 * i] = image[3 * i + 1] = image[3 * i + 2] = static_cast<uint8_t>(i % 256);
  }
  for (const std::array<double, 3>& factors :
       {std::array<double, 3>{1.3, 0.6, 1.2}, std::array<double, 3>{0.7, 1.9, 0.4}}) {
    std::vector<uint8_t> whole = image, alone = image;
    ApplyRandomHsv(RgbImageView{whole.data(), height, width}, RandomHsvParams{factors});
    for (size_t i = 0; i < alone.size(); i += 3) {
      ApplyRandomHsv(RgbImageView{alone.data() + i, 1, 1}, RandomHsvParams{factors});
    }
    EXPECT_EQ(whole, alone);
  }
}

// The channels-first form (a u8 CHW output, RandomHSV after a mosaic)
// gives the packed form's bytes, its last pixels (past the last group of 8)
// and greys included.
TEST(RandomHsv, ThreePlanesGiveThePackedBytes) {
  for (const int width : {64, 53, 5}) {
    const int height = 19;
    std::vector<uint8_t> packed = RandomHsvImage(height, width, 5);
    for (int i = 0; i < 2 * width; ++i) {
      packed[3 * i] = packed[3 * i + 1] = packed[3 * i + 2] = static_cast<uint8_t>(i * 3);
    }
    const size_t plane = static_cast<size_t>(height) * width;
    std::vector<uint8_t> planes(3 * plane);
    for (size_t i = 0; i < plane; ++i) {
      for (int c = 0; c < 3; ++c) planes[c * plane + i] = packed[3 * i + c];
    }
    const RandomHsvParams params{{1.17, 1.4, 0.85}};
    ApplyRandomHsv(RgbImageView{packed.data(), height, width}, params);
    internal::ApplyRandomHsvPlanes(planes.data(), planes.data() + plane, planes.data() + 2 * plane,
                                   static_cast<int64_t>(plane), params);
    for (size_t i = 0; i < plane; ++i) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(planes[c * plane + i], packed[3 * i + c]) << "width " << width << ", pixel " << i;
      }
    }
  }
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
