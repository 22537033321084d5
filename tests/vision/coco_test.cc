#include "feedline/vision/coco.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "vision/vision_testing.h"

namespace feedline::vision {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kFile = R"({
  "images": [{"id": 7, "file_name": "a.jpg", "height": 40, "width": 30},
             {"id": 9, "file_name": "sub/b.jpg", "height": 5, "width": 4},
             {"id": 11, "file_name": "empty.jpg"}],
  "annotations": [
    {"id": 1, "image_id": 9, "bbox": [1, 1, 2, 3], "category_id": 3, "iscrowd": 0,
     "area": 6.5, "segmentation": [[1, 1, 3, 1, 3, 4, 1, 4]]},
    {"id": 2, "image_id": 7, "bbox": [5, 3, 16.5, 27], "category_id": 1, "iscrowd": 1,
     "segmentation": {"size": [5, 4], "counts": "63204"}},
    {"id": 3, "image_id": 9, "bbox": [0, 0, 4, 5], "category_id": 2,
     "segmentation": {"size": [5, 4], "counts": [6, 3, 2, 3, 6]}},
    {"id": 4, "image_id": 7, "bbox": [0, 0, 1, 1], "category_id": 1.0,
     "segmentation": [[0, 0, 1, 0, 1, 1], [2, 2, 3, 2, 3, 3, 2, 3]]}],
  "categories": [{"id": 1, "name": "cat"}, {"id": 3, "name": "dog"}, {"id": 2, "name": "car"}]
})";

TEST(CocoAnnotations, ObjectsAreGroupedByImageInTheFilesOrder) {
  const CocoAnnotations coco = CocoAnnotations::Parse(kFile, "test.json");
  ASSERT_EQ(coco.num_images(), 3);
  EXPECT_EQ(coco.image(0).id, 7);
  EXPECT_EQ(coco.file_name(1), "sub/b.jpg");
  EXPECT_EQ(coco.image(0).height, 40);
  EXPECT_EQ(coco.image(2).width, 0);  // not given
  ASSERT_EQ(coco.objects(0).size(), 2u);
  ASSERT_EQ(coco.objects(1).size(), 2u);
  EXPECT_TRUE(coco.objects(2).empty());

  const CocoObject& crowd = coco.objects(0)[0];
  EXPECT_TRUE(crowd.crowd);
  EXPECT_EQ(crowd.category, 1);
  EXPECT_THAT(crowd.box, ElementsAre(5, 3, 16.5f, 27));
  EXPECT_FLOAT_EQ(crowd.area, 16.5f * 27);  // no "area": the box's
  ASSERT_EQ(crowd.segmentation, CocoSegmentation::kRle);
  EXPECT_THAT(coco.rle(crowd.first).counts, ElementsAre(6, 3, 2, 3, 6));

  const CocoObject& two_polygons = coco.objects(0)[1];
  EXPECT_EQ(two_polygons.category, 1);  // 1.0 is an integer
  ASSERT_EQ(two_polygons.segmentation, CocoSegmentation::kPolygons);
  ASSERT_EQ(two_polygons.count, 2u);
  EXPECT_THAT(coco.polygon(two_polygons.first), ElementsAre(0, 0, 1, 0, 1, 1));
  EXPECT_THAT(coco.polygon(two_polygons.first + 1), ElementsAre(2, 2, 3, 2, 3, 3, 2, 3));

  const CocoObject& polygon = coco.objects(1)[0];
  EXPECT_FALSE(polygon.crowd);
  EXPECT_FLOAT_EQ(polygon.area, 6.5f);
  EXPECT_THAT(coco.polygon(polygon.first), ElementsAre(1, 1, 3, 1, 3, 4, 1, 4));
  EXPECT_THAT(coco.rle(coco.objects(1)[1].first).counts, ElementsAre(6, 3, 2, 3, 6));

  ASSERT_EQ(coco.categories().size(), 3u);
  EXPECT_EQ(coco.categories()[1], std::make_pair(int64_t{3}, std::string("dog")));
}

TEST(CocoAnnotations, CompressedCountsDecodeAsCocosTools) {
  // pycocotools.mask.encode of a 40x30 mask: rows 3..29 x columns 5..20,
  // and rows 10 and 11 whole.
  const std::vector<uint32_t> counts = DecodeCocoRleString(
      ":2V10000000Ii0^O000000000000000000000000000007WOb0000000000000000F", 40, 30, "m");
  std::vector<uint8_t> mask(40 * 30);
  size_t at = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    for (uint32_t i = 0; i < counts[k]; ++i) mask[at++] = k % 2;
  }
  ASSERT_EQ(at, mask.size());
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 30; ++x) {
      const bool inside = (y >= 3 && y < 30 && x >= 5 && x < 21) || y == 10 || y == 11;
      ASSERT_EQ(mask[static_cast<size_t>(x) * 40 + y], inside ? 1 : 0) << y << "," << x;
    }
  }
}

TEST(CocoAnnotations, ACompressedCountTooLongForItsBitsIsAnErrorNamingTheMask) {
  // Twelve characters of a count whose "more" bit stays set (0x20 + 48 = 'P'
  // each): refused before its shift passes 60 bits (the fuzzer's find).
  try {
    DecodeCocoRleString(std::string(13, 'P'), 40, 30, "mask 7");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("mask 7"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("end inside a count"));
  }
}

TEST(CocoAnnotations, ErrorsNameTheFileAndWhere) {
  auto message = [](const std::string& json) {
    try {
      CocoAnnotations::Parse(json, "ann.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("{\"images\": [}"), HasSubstr("ann.json: its text: not JSON"));
  EXPECT_THAT(message("[]"), HasSubstr("not a JSON object"));
  EXPECT_THAT(message("{}"), HasSubstr("has no \"images\""));
  EXPECT_THAT(message(R"({"images": [{"id": 1}]})"), HasSubstr("image 0: has no \"file_name\""));
  EXPECT_THAT(message(R"({"images": [{"id": 1, "file_name": "a"}, {"id": 1, "file_name": "b"}]})"),
              HasSubstr("image 1: repeats image id 1"));
  const std::string one = R"({"images": [{"id": 1, "file_name": "a"}], "annotations": [)";
  EXPECT_THAT(message(one + R"({"image_id": 2, "bbox": [0, 0, 1, 1], "category_id": 1}]})"),
              HasSubstr("annotation 0: names image id 2, which \"images\" lacks"));
  EXPECT_THAT(message(one + R"({"image_id": 1, "bbox": [0, 0, 1], "category_id": 1}]})"),
              HasSubstr("annotation 0: \"bbox\" is not 4 numbers"));
  EXPECT_THAT(message(one + R"({"image_id": 1, "bbox": [0, 0, 1, 1]}]})"),
              HasSubstr("annotation 0: has no \"category_id\""));
  EXPECT_THAT(message(one + R"({"image_id": 1, "bbox": [0, 0, 1, 1], "category_id": 1,
                                "segmentation": [[1, 2, 3]]}]})"),
              HasSubstr("not a list of x, y pairs"));
  EXPECT_THAT(message(one + R"({"image_id": 1, "bbox": [0, 0, 1, 1], "category_id": 1,
                                "segmentation": {"size": [5, 4], "counts": [6, 3]}}]})"),
              HasSubstr("the mask's runs cover 9 pixels, not 20"));
  EXPECT_THAT(message(one + R"({"image_id": 1, "bbox": [0, 0, 1, 1], "category_id": 1,
                                "keypoints": [1, 2, 2, 4]}]})"),
              HasSubstr("annotation 0: \"keypoints\" is not a list of at most 4096 x, y, "
                        "visibility triples"));
  EXPECT_THAT(message(one + R"({"image_id": 1, "bbox": [0, 0, 1, 1], "category_id": 1,
                                "keypoints": [1, "a", 2]}]})"),
              HasSubstr("annotation 0: \"keypoints\" is not a number"));
  EXPECT_THAT(message(one + R"({"image_id": 1, "bbox": [0, 0, 1, 1], "category_id": 1,
                                "segmentation": {"size": [5, 4], "counts": "6~"}}]})"),
              HasSubstr("outside the format"));
}

TEST(CocoAnnotations, ReadNamesAFileThatIsMissing) {
  testing::TempDir dir;
  try {
    CocoAnnotations::Read(dir / "missing.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing.json: cannot be read: No such file or directory"));
  }
  testing::WriteBytes(dir / "ok.json", std::vector<uint8_t>(kFile, kFile + std::strlen(kFile)));
  EXPECT_EQ(CocoAnnotations::Read(dir / "ok.json").num_images(), 3);
}

}  // namespace
}  // namespace feedline::vision
