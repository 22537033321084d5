#include "feedline/vision/coco_detection.h"

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

// A 30 x 20 PNG (lossless: pixels compare exactly) whose pixel (x, y) has
// red x * 8 and green y * 8.
std::vector<uint8_t> GradientPng() {
  std::vector<uint8_t> rgb(30 * 20 * 3);
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 30; ++x) {
      rgb[(y * 30 + x) * 3] = static_cast<uint8_t>(x * 8);
      rgb[(y * 30 + x) * 3 + 1] = static_cast<uint8_t>(y * 8);
    }
  }
  return EncodePng(rgb, 30, 20);
}

// Image 5 ("a.png") has four objects: a box, a crowd, a box with no height
// and a box reaching outside the image; image 6 ("b.png") has none.
constexpr const char* kAnnotations = R"({
  "images": [{"id": 5, "file_name": "a.png", "height": 20, "width": 30},
             {"id": 6, "file_name": "b.png", "height": 20, "width": 30}],
  "annotations": [
    {"image_id": 5, "bbox": [2, 3, 10, 4], "category_id": 4, "area": 33,
     "segmentation": [[2, 3, 12, 3, 12, 7, 2, 7]]},
    {"image_id": 5, "bbox": [0, 0, 30, 20], "category_id": 9, "iscrowd": 1},
    {"image_id": 5, "bbox": [5, 5, 3, 0], "category_id": 4},
    {"image_id": 5, "bbox": [25, 10, 10, 20], "category_id": 7}],
  "categories": [{"id": 4, "name": "four"}, {"id": 7, "name": "seven"}]
})";

class CocoDetectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteBytes(dir_ / "a.png", GradientPng());
    testing::WriteBytes(dir_ / "b.png", GradientPng());
    const std::string json = kAnnotations;
    testing::WriteBytes(dir_ / "ann.json", std::vector<uint8_t>(json.begin(), json.end()));
  }
  CocoDetection Make(std::vector<Transform> transforms, CocoDetectionOptions options = {}) {
    return CocoDetection(dir_.path(), dir_ / "ann.json",
                         Pipeline(std::move(transforms), {.dtype = DType::kU8}), options);
  }
  testing::TempDir dir_;
};

template <typename T>
std::vector<T> FieldValues(const Sample& s, const std::string& name) {
  const Tensor* t = s.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  return std::vector<T>(t->data<T>(), t->data<T>() + t->elements());
}

TEST_F(CocoDetectionTest, ATargetAsTheReferencesBuildIt) {
  CocoDetection data = Make({}, {.masks = true});
  ASSERT_EQ(data.size(), 2);
  EXPECT_EQ(data.Source(0), dir_ / "a.png");
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_EQ(s.Find("image")->shape(), (Shape{20, 30, 3}));
  // The crowd and the box with no height are dropped; the last box is
  // clamped to the image.
  EXPECT_EQ(s.Find("boxes")->shape(), (Shape{2, 4}));
  EXPECT_THAT(FieldValues<float>(s, "boxes"), ElementsAre(2, 3, 12, 7, 25, 10, 30, 20));
  EXPECT_THAT(FieldValues<int64_t>(s, "labels"), ElementsAre(4, 7));
  EXPECT_THAT(FieldValues<float>(s, "area"), ElementsAre(33, 200));
  EXPECT_THAT(FieldValues<int64_t>(s, "iscrowd"), ElementsAre(0, 0));
  EXPECT_THAT(FieldValues<int64_t>(s, "image_id"), ElementsAre(5));
  EXPECT_THAT(FieldValues<int64_t>(s, "image_size"), ElementsAre(20, 30));
  ASSERT_EQ(s.Find("masks")->shape(), (Shape{2, 20, 30}));
  const std::vector<uint8_t> masks = FieldValues<uint8_t>(s, "masks");
  int set = 0;
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 30; ++x) {
      const bool inside = x >= 2 && x < 12 && y >= 3 && y < 7;
      EXPECT_EQ(masks[static_cast<size_t>(y * 30 + x)], inside ? 1 : 0) << x << "," << y;
      set += masks[static_cast<size_t>(600 + y * 30 + x)];
    }
  }
  EXPECT_EQ(set, 5 * 10);  // no segmentation: its box (25..30 x 10..20) as its mask

  Sample empty;
  data.Get(1, empty, ctx);
  EXPECT_EQ(empty.Find("boxes")->shape(), (Shape{0, 4}));
  EXPECT_EQ(empty.Find("masks")->shape(), (Shape{0, 20, 30}));
}

TEST_F(CocoDetectionTest, BoxesAndMasksMoveWithThePixels) {
  // Mirrored, then the centre 10 x 16 taken (columns 7-22 of the mirror).
  CocoDetection data = Make({Transform::RandomHorizontalFlip(1.0), Transform::CenterCrop(10, 16)},
                            {.masks = true});
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  const Tensor& image = *s.Find("image");
  ASSERT_EQ(image.shape(), (Shape{10, 16, 3}));
  // Output (0, 0) is source (22, 5): red 22 * 8, green 5 * 8.
  EXPECT_EQ(image.data<uint8_t>()[0], 22 * 8);
  EXPECT_EQ(image.data<uint8_t>()[1], 5 * 8);
  // Box 2..12 mirrors to 18..28, then -7: 11..16 (clipped), rows 3..7 - 5:
  // 0..2. Box 25..30 mirrors to 0..5, outside the crop: dropped.
  EXPECT_THAT(FieldValues<float>(s, "boxes"), ElementsAre(11, 0, 16, 2));
  EXPECT_THAT(FieldValues<int64_t>(s, "labels"), ElementsAre(4));
  const std::vector<uint8_t> mask = FieldValues<uint8_t>(s, "masks");
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 16; ++x) {
      EXPECT_EQ(mask[static_cast<size_t>(y * 16 + x)], (x >= 11 && y < 2) ? 1 : 0) << x << "," << y;
    }
  }
  EXPECT_THAT(FieldValues<int64_t>(s, "image_size"), ElementsAre(10, 16));
}

TEST_F(CocoDetectionTest, ResizedBoxesScaleWithTheImage) {
  CocoDetection data = Make({Transform::Resize(40, 60)});
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_THAT(FieldValues<float>(s, "boxes"), ElementsAre(4, 6, 24, 14, 50, 20, 60, 40));
  EXPECT_EQ(s.Find("masks"), nullptr);  // not asked for
}

TEST_F(CocoDetectionTest, OptionsKeepCrowdsAndSkipImagesWithoutBoxes) {
  CocoDetection crowds = Make({}, {.keep_crowd = true});
  Sample s;
  SampleContext ctx(0, 0, 0);
  crowds.Get(0, s, ctx);
  EXPECT_THAT(FieldValues<int64_t>(s, "iscrowd"), ElementsAre(0, 1, 0));
  EXPECT_THAT(FieldValues<int64_t>(s, "labels"), ElementsAre(4, 9, 7));
  CocoDetection train = Make({}, {.skip_empty = true});
  ASSERT_EQ(train.size(), 1);
  EXPECT_EQ(train.Source(0), dir_ / "a.png");
}

TEST_F(CocoDetectionTest, AMissingImageIsASampleErrorNamingIt) {
  std::filesystem::remove(dir_ / "b.png");
  CocoDetection data = Make({});
  Sample s;
  SampleContext ctx(0, 0, 0);
  EXPECT_THROW(data.Get(1, s, ctx), SampleError);
  try {
    data.Get(1, s, ctx);
  } catch (const SampleError& e) {
    EXPECT_THAT(e.what(), HasSubstr("b.png"));
  }
  EXPECT_THROW(Make({}).Get(2, s, ctx), Error);  // out of range
}

TEST_F(CocoDetectionTest, PixelMovingAugmentationsAreRefused) {
  try {
    Make({Transform::RandAugment()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("COCO dataset: rand_augment"));
  }
}

TEST_F(CocoDetectionTest, ABrokenAnnotationFileIsAnErrorNamingIt) {
  testing::WriteBytes(dir_ / "ann.json", {'{', '['});
  try {
    Make({});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("ann.json: its text: not JSON"));
  }
}

}  // namespace
}  // namespace feedline::vision
