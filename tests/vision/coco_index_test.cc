#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "feedline/error.h"
#include "feedline/vision/coco.h"

namespace feedline::vision {
namespace {

using ::testing::HasSubstr;

// Every kind of object: polygons (two for one object), compressed and
// uncompressed run-length masks, none, a crowd, keypoints, an image without
// objects.
constexpr const char* kIndexedFile = R"({
  "images": [{"id": 7, "file_name": "a.jpg", "height": 40, "width": 30},
             {"id": 9, "file_name": "sub/b.jpg", "height": 5, "width": 4},
             {"id": 11, "file_name": "empty.jpg"}],
  "annotations": [
    {"id": 1, "image_id": 9, "bbox": [1, 1, 2, 3], "category_id": 3, "iscrowd": 0,
     "area": 6.5, "segmentation": [[1.25, 1, 3, 1, 3, 4, 1, 4]]},
    {"id": 2, "image_id": 7, "bbox": [5, 3, 16.5, 27], "category_id": 1, "iscrowd": 1,
     "segmentation": {"size": [5, 4], "counts": "63204"}},
    {"id": 3, "image_id": 9, "bbox": [0, 0, 4, 5], "category_id": 2,
     "segmentation": {"size": [5, 4], "counts": [6, 3, 2, 3, 6]}},
    {"id": 4, "image_id": 7, "bbox": [0, 0, 1, 1], "category_id": 1,
     "segmentation": [[0, 0, 1, 0, 1, 1], [2, 2, 3, 2, 3, 3, 2, 3]]},
    {"id": 5, "image_id": 7, "bbox": [1, 2, 3, 4], "category_id": 2,
     "keypoints": [1.5, 2, 2, 0, 0, 0, 3, 4.25, 1]}],
  "categories": [{"id": 1, "name": "cat"}, {"id": 3, "name": "dog"}, {"id": 2, "name": "car"}]
})";

TEST(CocoIndex, AnIndexLoadsWhatTheFileParsedTo) {
  const CocoAnnotations parsed = CocoAnnotations::Parse(kIndexedFile, "test.json");
  const std::string index = parsed.ToIndex();
  const CocoAnnotations loaded = CocoAnnotations::FromIndex(index, "test.index");
  EXPECT_EQ(loaded.ToIndex(), index);
  ASSERT_EQ(loaded.num_images(), 3);
  EXPECT_EQ(loaded.file_name(1), "sub/b.jpg");
  EXPECT_EQ(loaded.image(0).height, 40);
  ASSERT_EQ(loaded.objects(0).size(), 3u);
  EXPECT_TRUE(loaded.objects(0)[0].crowd);
  EXPECT_EQ(loaded.rle(loaded.objects(0)[0].first).counts,
            parsed.rle(parsed.objects(0)[0].first).counts);
  const CocoObject& two_polygons = loaded.objects(0)[1];
  ASSERT_EQ(two_polygons.segmentation, CocoSegmentation::kPolygons);
  EXPECT_EQ(two_polygons.count, 2u);
  EXPECT_EQ(loaded.polygon(two_polygons.first + 1).size(), 8u);
  EXPECT_EQ(loaded.polygon(loaded.objects(1)[0].first)[0], 1.25);
  EXPECT_EQ(loaded.objects(0)[2].segmentation, CocoSegmentation::kNone);
  ASSERT_EQ(loaded.objects(0)[2].keypoint_count, 3u);
  EXPECT_THAT(loaded.keypoints(loaded.objects(0)[2]),
              ::testing::ElementsAre(1.5f, 2, 2, 0, 0, 0, 3, 4.25f, 1));
  EXPECT_EQ(loaded.objects(0)[1].keypoint_count, 0u);
  EXPECT_EQ(loaded.categories(), parsed.categories());
  EXPECT_TRUE(loaded.objects(2).empty());
}

TEST(CocoIndex, EveryCutOrChangedByteIsAnErrorOrTheSameShape) {
  const std::string index = CocoAnnotations::Parse(kIndexedFile, "test.json").ToIndex();
  for (size_t cut = 0; cut < index.size(); ++cut) {
    try {
      CocoAnnotations::FromIndex(std::string_view(index).substr(0, cut), "cut.index");
      ADD_FAILURE() << "an index cut at " << cut << " of " << index.size() << " loaded";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("COCO annotation index cut.index: "));
    }
  }
  // A changed byte is either refused or loads an index whose every offset
  // is in range (the accessors read only inside their arrays).
  for (size_t at = 0; at < index.size(); ++at) {
    std::string changed = index;
    changed[at] = static_cast<char>(changed[at] ^ 0x5a);
    try {
      const CocoAnnotations loaded = CocoAnnotations::FromIndex(changed, "changed.index");
      for (int64_t i = 0; i < loaded.num_images(); ++i) {
        (void)loaded.file_name(i);
        for (const CocoObject& o : loaded.objects(i)) {
          if (o.segmentation == CocoSegmentation::kPolygons) {
            for (uint32_t k = 0; k < o.count; ++k) (void)loaded.polygon(o.first + k);
          }
        }
      }
    } catch (const Error&) {
    }
  }
  EXPECT_THROW(CocoAnnotations::FromIndex(index + "x", "long.index"), Error);
  EXPECT_THROW(CocoAnnotations::FromIndex("FLCOCOI0" + index.substr(8), "old.index"), Error);
}

}  // namespace
}  // namespace feedline::vision
