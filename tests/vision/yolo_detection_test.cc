#include "feedline/vision/yolo_detection.h"

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

// A 40 x 20 (width x height) PNG.
std::vector<uint8_t> YoloTestPng() {
  std::vector<uint8_t> rgb(40 * 20 * 3, 100);
  return EncodePng(rgb, 40, 20);
}

void WriteText(const std::string& path, const std::string& text) {
  testing::WriteBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

template <typename T>
std::vector<T> YoloValues(const Sample& s, const std::string& name) {
  const Tensor* t = s.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  return std::vector<T>(t->data<T>(), t->data<T>() + t->elements());
}

class YoloDetectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"a.png", "b.png", "sub/c.png"}) {
      testing::WriteBytes(dir_ / (std::string("images/train/") + name), YoloTestPng());
    }
    // a: a box (centre 0.25, 0.5, size 0.5 x 0.5 -> x 0..20, y 5..15) and a
    // triangle polygon; b: no label file; c: a box of class 7.
    WriteText(dir_ / "labels/train/a.txt", "3 0.25 0.5 0.5 0.5\n\n1 0.5 0 1 0 1 1\n");
    WriteText(dir_ / "labels/train/sub/c.txt", "7 0.5 0.5 1.0 1.0\n");
  }
  YoloDetection Make(std::vector<Transform> transforms, bool masks = false) {
    YoloDetectionOptions options;
    options.masks = masks;
    return YoloDetection(dir_ / "images/train", Pipeline(std::move(transforms), {.dtype = DType::kU8}),
                         options);
  }
  testing::TempDir dir_;
};

TEST_F(YoloDetectionTest, LabelsBesideTheImagesBecomeBoxesInPixels) {
  YoloDetection data = Make({}, true);
  ASSERT_EQ(data.size(), 3);
  EXPECT_EQ(data.Source(2), dir_ / "images/train/sub/c.png");
  EXPECT_EQ(data.LabelFile(2), dir_ / "labels/train/sub/c.txt");
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_THAT(YoloValues<float>(s, "boxes"), ElementsAre(0, 5, 20, 15, 20, 0, 40, 20));
  EXPECT_THAT(YoloValues<int64_t>(s, "labels"), ElementsAre(3, 1));
  EXPECT_THAT(YoloValues<float>(s, "area"), ElementsAre(200, 400));
  EXPECT_THAT(YoloValues<int64_t>(s, "image_id"), ElementsAre(0));
  ASSERT_EQ(s.Find("masks")->shape(), (Shape{2, 20, 40}));
  const std::vector<uint8_t> masks = YoloValues<uint8_t>(s, "masks");
  // The box has no polygon: its box is its mask. The triangle (20, 0), (40, 0),
  // (40, 20): the 190 pixels pycocotools draws for it.
  int box_pixels = 0, triangle_pixels = 0;
  for (size_t i = 0; i < 800; ++i) box_pixels += masks[i];
  for (size_t i = 800; i < 1600; ++i) triangle_pixels += masks[i];
  EXPECT_EQ(box_pixels, 10 * 20);  // a box line: its box as its mask
  EXPECT_EQ(triangle_pixels, 190);
  Sample background;
  data.Get(1, background, ctx);
  EXPECT_EQ(background.Find("boxes")->shape(), (Shape{0, 4}));
}

TEST_F(YoloDetectionTest, BoxesFollowAFlipAndAResize) {
  YoloDetection data = Make({Transform::RandomHorizontalFlip(1.0), Transform::Resize(10, 20)});
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_THAT(YoloValues<float>(s, "boxes"), ElementsAre(10, 2.5f, 20, 7.5f, 0, 0, 10, 10));
  EXPECT_THAT(YoloValues<int64_t>(s, "image_size"), ElementsAre(10, 20));
}

TEST_F(YoloDetectionTest, ABadLabelLineIsASampleErrorNamingTheFileAndLine) {
  YoloDetection data = Make({});
  Sample s;
  SampleContext ctx(0, 0, 0);
  auto message = [&](const std::string& text) {
    WriteText(dir_ / "labels/train/a.txt", text);
    try {
      data.Get(0, s, ctx);
    } catch (const SampleError& e) {
      EXPECT_EQ(e.source(), dir_ / "labels/train/a.txt");
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("3 0.5 0.5 0.1\n"), HasSubstr("line 1: has 4 numbers"));
  EXPECT_THAT(message("3 0.5 0.5 0.1 0.1\n3 0.5 x 0.1 0.1\n"),
              HasSubstr("line 2: '3 0.5 x 0.1 0.1' is not a list of numbers"));
  EXPECT_THAT(message("-1 0.5 0.5 0.1 0.1\n"), HasSubstr("is not a whole number >= 0"));
  EXPECT_THAT(message("2.5 0.5 0.5 0.1 0.1\n"), HasSubstr("is not a whole number >= 0"));
  EXPECT_THAT(message("2 0.5 0.5 30 20\n"), HasSubstr("outside [0, 1]"));
  EXPECT_THAT(message("2 0.5 0.5 nan 0.1\n"), HasSubstr("is not a list of numbers"));
  EXPECT_THAT(message("0 0.5.5 0.2 0.3\n"), HasSubstr("is not a list of numbers"));
  EXPECT_THAT(message("1e12 0.5 0.5 0.2 0.3\n"), HasSubstr("class 1e+12 is not"));
  EXPECT_THAT(message("2 0.5 0.5 1.5 0.1\n"), HasSubstr("coordinate 1.5 is outside"));
  // A leading '+' and CRLF line ends are read as Ultralytics reads them.
  WriteText(dir_ / "labels/train/a.txt", "+3 +0.25 0.5 0.5 0.5\r\n");
  data.Get(0, s, ctx);
  EXPECT_THAT(YoloValues<float>(s, "boxes"), ElementsAre(0, 5, 20, 15));
}

TEST_F(YoloDetectionTest, PixelMovingAugmentationsAndAMissingLabelsFolderAreRefused) {
  try {
    Make({Transform::TrivialAugmentWide()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("where the boxes and masks cannot follow"));
  }
  std::filesystem::remove_all(dir_ / "labels");
  try {
    Make({});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("labels folder " + dir_ / "labels/train is missing"));
  }
}

TEST_F(YoloDetectionTest, AFolderOutsideTheLayoutIsAnErrorNamingIt) {
  testing::WriteBytes(dir_ / "photos/x.png", YoloTestPng());
  EXPECT_THROW(YoloDetection(dir_ / "photos", Pipeline({})), Error);
  try {
    YoloDetection(dir_ / "photos", Pipeline({}));
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no 'images' folder"));
  }
  std::filesystem::create_directories(dir_ / "images/empty");
  std::filesystem::create_directories(dir_ / "labels/empty");
  try {
    YoloDetection(dir_ / "images/empty", Pipeline({}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no image files"));
  }
  EXPECT_EQ(YoloLabelPath("/d/images/train/x.y.jpg"), "/d/labels/train/x.y.txt");
  EXPECT_EQ(YoloLabelPath("/d/pics/x.jpg"), "");
}

}  // namespace
}  // namespace feedline::vision
