#include "feedline/vision/voc_detection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/synth/encode.h"
#include "vision/vision_testing.h"

namespace feedline::vision {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void WriteVocText(const std::string& path, const std::string& text) {
  testing::WriteBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

template <typename T>
std::vector<T> VocValues(const Sample& s, const std::string& name) {
  const Tensor* t = s.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  return std::vector<T>(t->data<T>(), t->data<T>() + t->elements());
}

// A 40 x 20 (width x height) image with a cat over pixels 1..10 x 1..5
// (counted from 1, as VOC counts) and a difficult dog over 21..40 x 11..20.
class VocDetectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<uint8_t> rgb(40 * 20 * 3, 90);
    testing::WriteBytes(dir_ / "JPEGImages/img1.jpg", EncodeJpeg(rgb, 40, 20, {.quality = 90}));
    WriteVocText(dir_ / "ImageSets/Main/train.txt", "img1\n");
    WriteVocText(dir_ / "Annotations/img1.xml",
              "<annotation><size><width>40</width><height>20</height></size>"
              "<object><name>cat</name><difficult>0</difficult><bndbox><xmin>1</xmin>"
              "<ymin>1</ymin><xmax>10</xmax><ymax>5</ymax></bndbox></object>"
              "<object><name>dog</name><difficult>1</difficult><bndbox><xmin>21</xmin>"
              "<ymin>11</ymin><xmax>40</xmax><ymax>20</ymax></bndbox></object></annotation>");
  }
  VocDetection Make(std::vector<Transform> transforms, bool keep_difficult = false) {
    VocDetectionOptions options;
    options.keep_difficult = keep_difficult;
    return VocDetection(dir_.path(), "train", Pipeline(std::move(transforms), {.dtype = DType::kU8}),
                        options);
  }
  testing::TempDir dir_;
};

TEST_F(VocDetectionTest, ObjectsBecomeTargetsAndDifficultOnesAreLeftOut) {
  VocDetection data = Make({});
  ASSERT_EQ(data.size(), 1);
  EXPECT_EQ(data.Source(0), dir_ / "JPEGImages/img1.jpg");
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_THAT(VocValues<float>(s, "boxes"), ElementsAre(0, 0, 10, 5));
  EXPECT_THAT(VocValues<int64_t>(s, "labels"), ElementsAre(7));  // cat
  EXPECT_THAT(VocValues<float>(s, "area"), ElementsAre(50));
  EXPECT_THAT(VocValues<int64_t>(s, "iscrowd"), ElementsAre(0));
  EXPECT_THAT(VocValues<int64_t>(s, "image_size"), ElementsAre(20, 40));
  EXPECT_THAT(VocValues<int64_t>(s, "image_id"), ElementsAre(0));
  EXPECT_EQ(s.Find("masks"), nullptr);
}

TEST_F(VocDetectionTest, KeptDifficultObjectsAreCrowdsAndBoxesFollowAFlip) {
  VocDetection data = Make({Transform::RandomHorizontalFlip(1.0)}, /*keep_difficult=*/true);
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_THAT(VocValues<float>(s, "boxes"), ElementsAre(30, 0, 40, 5, 0, 10, 20, 20));
  EXPECT_THAT(VocValues<int64_t>(s, "labels"), ElementsAre(7, 11));
  EXPECT_THAT(VocValues<int64_t>(s, "iscrowd"), ElementsAre(0, 1));
}

TEST_F(VocDetectionTest, AMissingImageIsASampleErrorNamingIt) {
  VocDetection data = Make({});
  std::filesystem::remove(dir_ / "JPEGImages/img1.jpg");
  Sample s;
  SampleContext ctx(0, 0, 0);
  try {
    data.Get(0, s, ctx);
    FAIL() << "no error";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.source(), dir_ / "JPEGImages/img1.jpg");
  }
}

TEST_F(VocDetectionTest, SizeDivisibilityPadsTheImageInItsLayout) {
  EXPECT_TRUE(Make({}).PadMultiples().empty());
  VocDetectionOptions options;
  options.size_divisibility = 32;
  VocDetection hwc(dir_.path(), "train", Pipeline({}, {.dtype = DType::kU8}), options);
  ASSERT_EQ(hwc.PadMultiples().size(), 1u);
  EXPECT_EQ(hwc.PadMultiples()[0].field, "image");
  EXPECT_THAT(hwc.PadMultiples()[0].multiples, ElementsAre(32, 32, 1));
  VocDetection chw(dir_.path(), "train",
                   Pipeline({Transform::ToCHW()}, {.dtype = DType::kF32}), options);
  EXPECT_THAT(chw.PadMultiples()[0].multiples, ElementsAre(1, 32, 32));
  options.size_divisibility = 0;
  EXPECT_THROW(VocDetection(dir_.path(), "train", Pipeline({}), options), Error);
}

TEST_F(VocDetectionTest, PixelMovingAugmentationsAreRefused) {
  try {
    Make({Transform::TrivialAugmentWide()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("where the boxes and masks cannot follow"));
  }
}

TEST_F(VocDetectionTest, AMosaicSampleIsSizeBySizeWithTheImagesObjectsAndRefusesAResize) {
  VocDetectionOptions options;
  options.mosaic = MosaicOptions{};
  options.mosaic->size = 64;
  options.mosaic->p = 0;  // the image alone, letterboxed: 40 x 20 to 64 x 32 at the centre
  options.mosaic->scale = 0;
  options.mosaic->translate = 0;
  VocDetection data(dir_.path(), "train", Pipeline({}, {.dtype = DType::kU8}), options);
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_EQ(s.Find("image")->shape(), (Shape{64, 64, 3}));
  // The cat (pixels 0..10 x 0..5 of 40 x 20) scaled by 1.6 into the band at
  // y 16..48; the difficult dog left out.
  EXPECT_THAT(VocValues<float>(s, "boxes"), ElementsAre(0, 16, 16, 24));
  EXPECT_THAT(VocValues<int64_t>(s, "labels"), ElementsAre(7));
  EXPECT_THAT(VocValues<int64_t>(s, "image_size"), ElementsAre(64, 64));
  try {
    VocDetection(dir_.path(), "train", Pipeline({Transform::Resize(32)}), options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot follow a mosaic"));
  }
}

}  // namespace
}  // namespace feedline::vision
