#include "feedline/vision/coco_detection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
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

// Keypoints move with the pixels; a mirror swaps them as keypoint_flip says.
TEST_F(CocoDetectionTest, KeypointsMoveWithThePixelsAndSwapWhenMirrored) {
  const std::string json = R"({
    "images": [{"id": 5, "file_name": "a.png", "height": 20, "width": 30}],
    "annotations": [
      {"image_id": 5, "bbox": [2, 3, 10, 4], "category_id": 1,
       "keypoints": [3, 4, 2, 0, 0, 0, 10, 5, 1]},
      {"image_id": 5, "bbox": [0, 0, 30, 20], "category_id": 1, "iscrowd": 1,
       "keypoints": [1, 1, 2, 2, 2, 2, 3, 3, 2]},
      {"image_id": 5, "bbox": [25, 10, 10, 20], "category_id": 2}],
    "categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "other"}]
  })";
  testing::WriteBytes(dir_ / "kp.json", std::vector<uint8_t>(json.begin(), json.end()));
  CocoDetectionOptions options;
  options.keypoints = true;
  options.keypoint_flip = {0, 2, 1};
  auto make = [&](std::vector<Transform> transforms) {
    return CocoDetection(dir_.path(), dir_ / "kp.json",
                         Pipeline(std::move(transforms), {.dtype = DType::kU8}), options);
  };
  Sample s;
  SampleContext ctx(0, 0, 0);
  make({Transform::RandomHorizontalFlip(1.0), Transform::Resize(40, 60)}).Get(0, s, ctx);
  ASSERT_EQ(s.Find("keypoints")->shape(), (Shape{2, 3, 3}));
  // Object 0: keypoint 0 at (3, 4) mirrors to 27 and doubles: (54, 8);
  // keypoint 1's place takes keypoint 2, (10, 5) -> (40, 10); keypoint 2's
  // takes the unlabelled 1: zeros. The crowd is dropped; the last object
  // lists none: zeros.
  EXPECT_THAT(FieldValues<float>(s, "keypoints"),
              ElementsAre(54, 8, 2, 40, 10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  Sample plain;
  make({Transform::Resize(40, 60)}).Get(0, plain, ctx);
  EXPECT_THAT(FieldValues<float>(plain, "keypoints"),
              ElementsAre(6, 8, 2, 0, 0, 0, 20, 10, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_EQ(make({}).PaddedFields().back(), "keypoints");

  auto message = [&](CocoDetectionOptions bad, const std::string& file) {
    try {
      CocoDetection(dir_.path(), dir_ / file, Pipeline({}, {.dtype = DType::kU8}), bad);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CocoDetectionOptions bad = options;
  bad.keypoint_flip = {0, 1, 1};
  EXPECT_THAT(message(bad, "kp.json"), HasSubstr("keypoint_flip must list each of the 3"));
  bad.keypoint_flip = {0, 1};
  EXPECT_THAT(message(bad, "kp.json"), HasSubstr("keypoint_flip must list each of the 3"));
  bad.keypoint_flip = {};
  EXPECT_THAT(message(bad, "ann.json"), HasSubstr("no annotation lists \"keypoints\""));
}

TEST_F(CocoDetectionTest, ResizedBoxesScaleWithTheImage) {
  CocoDetection data = Make({Transform::Resize(40, 60)});
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  EXPECT_THAT(FieldValues<float>(s, "boxes"), ElementsAre(4, 6, 24, 14, 50, 20, 60, 40));
  EXPECT_EQ(s.Find("masks"), nullptr);  // not asked for
}

// RandomZoomOut moves the boxes and masks with the image: each box keeps
// its size, shifted by where the image landed on the canvas, and its mask
// is drawn there.
TEST_F(CocoDetectionTest, ZoomOutMovesBoxesAndMasks) {
  CocoDetection data = Make({Transform::RandomZoomOut({9, 9, 9}, {2, 2}, 1.0)}, {.masks = true});
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    Sample s;
    SampleContext ctx(0, epoch, 0);
    data.Get(0, s, ctx);
    ASSERT_EQ(s.Find("image")->shape(), (Shape{40, 60, 3}));
    const std::vector<float> boxes = FieldValues<float>(s, "boxes");
    ASSERT_EQ(boxes.size(), 8u);
    const float dx = boxes[0] - 2, dy = boxes[1] - 3;  // where the image landed
    EXPECT_THAT(boxes, ElementsAre(2 + dx, 3 + dy, 12 + dx, 7 + dy, 25 + dx, 10 + dy, 30 + dx,
                                   20 + dy));
    // The image's pixel (x, y) is at (dx + x, dy + y): red 8x, green 8y;
    // the fill around it.
    const uint8_t* image = s.Find("image")->data<uint8_t>();
    for (int y = 0; y < 20; ++y) {
      for (int x = 0; x < 30; ++x) {
        const size_t at = (static_cast<size_t>(dy + y) * 60 + static_cast<size_t>(dx + x)) * 3;
        ASSERT_EQ(image[at], x * 8) << x << "," << y;
        ASSERT_EQ(image[at + 1], y * 8) << x << "," << y;
      }
    }
    const int left = static_cast<int>(dx), top = static_cast<int>(dy);
    if (left > 0) {
      EXPECT_EQ(image[(static_cast<size_t>(top) * 60 + left - 1) * 3], 9);
    }
    if (top > 0) {
      EXPECT_EQ(image[(static_cast<size_t>(top - 1) * 60 + left) * 3], 9);
    }
    const std::vector<uint8_t> masks = FieldValues<uint8_t>(s, "masks");
    int set = 0;
    for (int y = 0; y < 40; ++y) {
      for (int x = 0; x < 60; ++x) {
        const bool inside = x >= 2 + dx && x < 12 + dx && y >= 3 + dy && y < 7 + dy;
        set += masks[static_cast<size_t>(y * 60 + x)];
        EXPECT_EQ(masks[static_cast<size_t>(y * 60 + x)], inside ? 1 : 0) << x << "," << y;
      }
    }
    EXPECT_EQ(set, 40);
  }
}

// Where the canvas shows no image no mask shows either, though a polygon
// reaches there: a polygon past the image's right edge is cut at it.
TEST_F(CocoDetectionTest, MasksStopWhereTheImageStops) {
  const std::string json = R"({
    "images": [{"id": 1, "file_name": "a.png", "height": 20, "width": 30}],
    "annotations": [{"image_id": 1, "bbox": [20, 5, 20, 5], "category_id": 4,
                     "segmentation": [[20, 5, 40, 5, 40, 10, 20, 10]]}],
    "categories": [{"id": 4, "name": "four"}]})";
  testing::WriteBytes(dir_ / "past.json", std::vector<uint8_t>(json.begin(), json.end()));
  CocoDetection data(dir_.path(), dir_ / "past.json",
                     Pipeline({Transform::RandomZoomOut({9, 9, 9}, {3, 3}, 1.0)},
                              {.dtype = DType::kU8}),
                     {.masks = true});
  Sample s;
  SampleContext ctx(0, 0, 0);
  data.Get(0, s, ctx);
  const std::vector<float> box = FieldValues<float>(s, "boxes");
  ASSERT_EQ(box.size(), 4u);
  const int dx = static_cast<int>(box[0]) - 20, dy = static_cast<int>(box[1]) - 5;
  const std::vector<uint8_t> mask = FieldValues<uint8_t>(s, "masks");
  int set = 0;
  for (int y = 0; y < 60; ++y) {
    for (int x = 0; x < 90; ++x) {
      const bool inside = x >= dx + 20 && x < dx + 30 && y >= dy + 5 && y < dy + 10;
      EXPECT_EQ(mask[static_cast<size_t>(y * 90 + x)], inside ? 1 : 0) << x << "," << y;
      set += mask[static_cast<size_t>(y * 90 + x)];
    }
  }
  EXPECT_EQ(set, 50);
}

// RandomIoUCrop keeps only the objects whose box centre is in its crop,
// even where another object's box still shows in it, as the references do.
TEST_F(CocoDetectionTest, IoUCropKeepsTheObjectsCentredInTheCrop) {
  CocoDetection data =
      Make({Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.0}, 40)}, {.masks = true});
  int both = 0, one = 0;
  for (int64_t epoch = 0; epoch < 60; ++epoch) {
    Sample s;
    SampleContext ctx(0, epoch, 0);
    data.Get(0, s, ctx);
    const std::vector<int64_t> size = FieldValues<int64_t>(s, "image_size");
    const std::vector<float> boxes = FieldValues<float>(s, "boxes");
    const std::vector<int64_t> labels = FieldValues<int64_t>(s, "labels");
    ASSERT_FALSE(labels.empty()) << "a crop holds a centred object";
    ASSERT_EQ(s.Find("masks")->shape()[0], static_cast<int64_t>(labels.size()));
    ASSERT_EQ(s.Find("image")->shape(), (Shape{size[0], size[1], 3}));
    // The image is the crop: its (0, 0) pixel has red 8 * left, green 8 * top.
    const uint8_t* image = s.Find("image")->data<uint8_t>();
    const int left = image[0] / 8, top = image[1] / 8;
    // Object 4 (2..12 x 3..7) has its centre at (7, 5); object 7 (25..30 x
    // 10..20) at (27.5, 15).
    const bool has4 = left < 7 && 7 < left + size[1] && top < 5 && 5 < top + size[0];
    const bool has7 = left < 27.5 && 27.5 < left + size[1] && top < 15 && 15 < top + size[0];
    std::vector<int64_t> want;
    if (has4) want.push_back(4);
    if (has7) want.push_back(7);
    EXPECT_EQ(labels, want) << "crop at " << left << "," << top << " " << size[1] << "x" << size[0];
    if (has4 && !has7) {
      // Box 4 in crop pixels, clipped to the crop.
      EXPECT_EQ(boxes[0], std::max(2 - left, 0));
      EXPECT_EQ(boxes[1], std::max(3 - top, 0));
    }
    (want.size() == 2 ? both : one) += 1;
  }
  EXPECT_GT(one, 0);  // some crops leave an object out
}

TEST_F(CocoDetectionTest, IoUCropOfAnImageWithoutObjectsLeavesIt) {
  CocoDetection data = Make({Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.0})});
  Sample s;
  SampleContext ctx(0, 0, 1);
  data.Get(1, s, ctx);
  EXPECT_EQ(s.Find("image")->shape(), (Shape{20, 30, 3}));
}

// source_masks: the references' ssd masks, at the source size, one per
// object the crop started with, mirrored with the image, whatever the
// zoom-out and the crop did to the image and the boxes.
TEST_F(CocoDetectionTest, SourceMasksStayAtTheSourceSizeMirroredWithTheImage) {
  CocoDetection plain = Make({}, {.masks = true});
  CocoDetection mirrored = Make({Transform::RandomHorizontalFlip(1.0)}, {.masks = true});
  CocoDetection data = Make({Transform::RandomZoomOut({0, 0, 0}, {2, 3}, 1.0),
                             Transform::RandomIoUCrop({0.3, 1.0}, {0.5, 2.0}, {0.0}),
                             Transform::RandomHorizontalFlip(0.5)},
                            {.masks = true, .source_masks = true});
  SampleContext ctx(0, 0, 0);
  Sample a, b;
  plain.Get(0, a, ctx);
  mirrored.Get(0, b, ctx);
  int flips = 0;
  for (int64_t epoch = 0; epoch < 12; ++epoch) {
    Sample s;
    SampleContext sample_ctx(0, epoch, 0);
    data.Get(0, s, sample_ctx);
    ASSERT_EQ(s.Find("masks")->shape(), (Shape{2, 20, 30}));
    EXPECT_THAT(FieldValues<int64_t>(s, "masks_size"), ElementsAre(20, 30));
    EXPECT_LE(s.Find("labels")->shape()[0], 2);
    const std::vector<uint8_t> masks = FieldValues<uint8_t>(s, "masks");
    if (masks == FieldValues<uint8_t>(a, "masks")) continue;
    EXPECT_EQ(masks, FieldValues<uint8_t>(b, "masks")) << epoch;
    ++flips;
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 12);
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

TEST_F(CocoDetectionTest, AMosaicSampleIsTheSizeAskedWithItsOwnImageId) {
  CocoDetectionOptions options;
  options.mosaic = MosaicOptions{.size = 32};
  CocoDetection data = Make({Transform::RandomHorizontalFlip(0.5)}, options);
  Sample s;
  SampleContext ctx(0, 0, 1);
  data.Get(1, s, ctx);
  EXPECT_EQ(s.Find("image")->shape(), (Shape{32, 32, 3}));
  EXPECT_THAT(FieldValues<int64_t>(s, "image_size"), ElementsAre(32, 32));
  EXPECT_THAT(FieldValues<int64_t>(s, "image_id"),
              ElementsAre(data.annotations().image(data.image_index(1)).id));
  for (float v : FieldValues<float>(s, "boxes")) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 32);
  }
}

TEST_F(CocoDetectionTest, AMosaicRefusesSourceMasksAndStepsThatCannotFollowIt) {
  CocoDetectionOptions options;
  options.mosaic = MosaicOptions{};
  try {
    Make({Transform::CenterCrop(8)}, options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("COCO dataset: center_crop(8) cannot follow a mosaic"));
  }
  options.masks = true;
  EXPECT_EQ(Make({}, options).PaddedFields().back(), "masks");  // drawn through the tiles
  options.source_masks = true;
  try {
    Make({}, options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("masks at the source's size (masks=\"source\") with mosaic"));
  }
  options.masks = false;
  options.source_masks = false;
  options.mosaic->translate = 0.7;
  try {
    Make({}, options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("mosaic translate must be in [0, 0.5]"));
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
