// The per-pixel colour operations of feedline/vision/image_ops.h
// (torchvision.transforms.functional's semantics), on small images whose
// results are known exactly: identities, extremes and fixed points.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "feedline/vision/image_ops.h"

namespace feedline::vision {
namespace {

struct Image {
  int height;
  int width;
  std::vector<uint8_t> pixels;  // packed RGB

  RgbImageView view() { return {pixels.data(), height, width}; }
};

// A deterministic image with every value range covered.
Image RampImage(int height, int width) {
  Image image{height, width, std::vector<uint8_t>(static_cast<size_t>(height) * width * 3)};
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = static_cast<uint8_t>((i * 37 + i / 3 * 11) % 256);
  }
  return image;
}

Image Filled(int height, int width, uint8_t r, uint8_t g, uint8_t b) {
  Image image{height, width, {}};
  for (int i = 0; i < height * width; ++i) image.pixels.insert(image.pixels.end(), {r, g, b});
  return image;
}

TEST(ColorOps, FactorOneIsTheIdentity) {
  const Image original = RampImage(5, 7);
  for (auto op : {AdjustBrightness, AdjustContrast, AdjustSaturation}) {
    Image image = original;
    op(image.view(), 1.0);
    EXPECT_EQ(image.pixels, original.pixels);
  }
  Image image = original;
  std::vector<uint8_t> scratch;
  AdjustSharpness(image.view(), 1.0, scratch);
  EXPECT_EQ(image.pixels, original.pixels);
}

TEST(AdjustBrightness, ScalesAndSaturates) {
  Image image = Filled(1, 3, 10, 100, 200);
  AdjustBrightness(image.view(), 2.0);
  EXPECT_EQ(image.pixels[0], 20);
  EXPECT_EQ(image.pixels[1], 200);
  EXPECT_EQ(image.pixels[2], 255);
  AdjustBrightness(image.view(), 0.0);
  for (const uint8_t v : image.pixels) EXPECT_EQ(v, 0);
}

TEST(AdjustSaturation, ZeroIsGray) {
  Image image = RampImage(4, 4);
  AdjustSaturation(image.view(), 0.0);
  for (size_t p = 0; p < image.pixels.size(); p += 3) {
    EXPECT_EQ(image.pixels[p], image.pixels[p + 1]) << p;
    EXPECT_EQ(image.pixels[p], image.pixels[p + 2]) << p;
  }
}

TEST(AdjustContrast, ZeroIsTheMeanGrayEverywhere) {
  Image image = RampImage(4, 6);
  AdjustContrast(image.view(), 0.0);
  for (const uint8_t v : image.pixels) EXPECT_EQ(v, image.pixels[0]);
}

TEST(AdjustHue, TurnsPrimariesIntoEachOther) {
  // A third of a turn: red to green; half a turn: red to cyan.
  Image image = Filled(2, 2, 255, 0, 0);
  AdjustHue(image.view(), 1.0 / 3.0);
  for (size_t p = 0; p < image.pixels.size(); p += 3) {
    EXPECT_LE(image.pixels[p], 1);
    EXPECT_GE(image.pixels[p + 1], 254);
    EXPECT_LE(image.pixels[p + 2], 1);
  }
  image = Filled(1, 9, 255, 0, 0);  // wider than one SIMD block
  AdjustHue(image.view(), 0.5);
  for (size_t p = 0; p < image.pixels.size(); p += 3) {
    EXPECT_LE(image.pixels[p], 1);
    EXPECT_GE(image.pixels[p + 1], 254);
    EXPECT_GE(image.pixels[p + 2], 254);
  }
  // Gray has no hue.
  Image gray = Filled(3, 3, 90, 90, 90);
  AdjustHue(gray.view(), 0.25);
  for (const uint8_t v : gray.pixels) EXPECT_NEAR(v, 90, 1);
}

TEST(AdjustSharpness, KeepsTheBorderAndFlatRegions) {
  Image flat = Filled(5, 5, 40, 80, 120);
  std::vector<uint8_t> scratch;
  AdjustSharpness(flat.view(), 2.0, scratch);
  EXPECT_EQ(flat.pixels, Filled(5, 5, 40, 80, 120).pixels);

  const Image original = RampImage(5, 5);
  Image image = original;
  AdjustSharpness(image.view(), 0.0, scratch);
  const auto at = [](const Image& im, int y, int x, int c) {
    return im.pixels[(static_cast<size_t>(y) * im.width + x) * 3 + c];
  };
  for (int x = 0; x < 5; ++x) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(at(image, 0, x, c), at(original, 0, x, c));
      EXPECT_EQ(at(image, 4, x, c), at(original, 4, x, c));
    }
  }
  EXPECT_NE(image.pixels, original.pixels);  // the inside is blurred
}

TEST(Posterize, KeepsTheTopBits) {
  Image image = RampImage(3, 3);
  const Image original = image;
  Posterize(image.view(), 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) EXPECT_EQ(image.pixels[i], original.pixels[i] & 0xE0);
  image = original;
  Posterize(image.view(), 8);
  EXPECT_EQ(image.pixels, original.pixels);
  Posterize(image.view(), 0);
  for (const uint8_t v : image.pixels) EXPECT_EQ(v, 0);
}

TEST(Solarize, InvertsFromTheThresholdUp) {
  Image image = Filled(1, 1, 127, 128, 250);
  Solarize(image.view(), 128);
  EXPECT_EQ(image.pixels[0], 127);
  EXPECT_EQ(image.pixels[1], 127);
  EXPECT_EQ(image.pixels[2], 5);
}

TEST(Invert, IsItsOwnInverse) {
  Image image = RampImage(4, 5);
  const Image original = image;
  Invert(image.view());
  for (size_t i = 0; i < image.pixels.size(); ++i) EXPECT_EQ(image.pixels[i], 255 - original.pixels[i]);
  Invert(image.view());
  EXPECT_EQ(image.pixels, original.pixels);
}

TEST(AutoContrast, StretchesEachChannelToTheFullRange) {
  // Red spans 50..150, green is constant, blue spans 0..255 already.
  Image image{1, 3, {50, 7, 0, 100, 7, 128, 150, 7, 255}};
  AutoContrast(image.view());
  EXPECT_EQ(image.pixels[0], 0);
  EXPECT_EQ(image.pixels[6], 255);
  EXPECT_NEAR(image.pixels[3], 127, 1);
  for (const int p : {1, 4, 7}) EXPECT_EQ(image.pixels[p], 7);  // a constant channel stays
  EXPECT_EQ(image.pixels[2], 0);
  EXPECT_EQ(image.pixels[5], 128);
  EXPECT_EQ(image.pixels[8], 255);
}

TEST(Equalize, SpreadsTwoLevelsAndLeavesAConstantImage) {
  Image constant = Filled(4, 4, 33, 33, 33);
  Equalize(constant.view());
  EXPECT_EQ(constant.pixels, Filled(4, 4, 33, 33, 33).pixels);

  // Half of 512 pixels 100, half 110: the levels go to the ends of the range.
  Image two = Filled(16, 32, 100, 100, 100);
  for (size_t i = two.pixels.size() / 2; i < two.pixels.size(); ++i) two.pixels[i] = 110;
  Equalize(two.view());
  EXPECT_EQ(two.pixels.front(), 0);
  EXPECT_EQ(two.pixels.back(), 255);
  // Fewer pixels than levels leave nothing to spread (torchvision's step of 0).
  Image few = Filled(2, 2, 100, 100, 100);
  for (size_t i = 6; i < few.pixels.size(); ++i) few.pixels[i] = 110;
  const Image before = few;
  Equalize(few.view());
  EXPECT_EQ(few.pixels, before.pixels);
}

}  // namespace
}  // namespace feedline::vision
