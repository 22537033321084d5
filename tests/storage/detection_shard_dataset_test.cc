#include "feedline/storage/detection_shard_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_index.h"
#include "feedline/synth/encode.h"
#include "feedline/vision/coco_detection.h"
#include "src/storage/shard_writer.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteBytes;
using vision::Pipeline;
using vision::Transform;

// A w x h JPEG of a gradient with a square in it.
std::vector<uint8_t> Photo(int w, int h, int seed) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
      const bool square = x > w / 4 && x < w / 2 && y > h / 3 && y < h * 2 / 3;
      p[0] = static_cast<uint8_t>(x * 255 / w);
      p[1] = static_cast<uint8_t>(square ? 250 : y * 255 / h);
      p[2] = static_cast<uint8_t>((x * y + seed * 40) % 256);
    }
  }
  return vision::EncodeJpeg(rgb, w, h);
}

// Three images: polygons (one object of two), a crowd with a run-length
// mask, a box without segmentation past the edge; the last has no objects.
constexpr const char* kCoco = R"({
  "images": [{"id": 11, "file_name": "a.jpg", "height": 40, "width": 48},
             {"id": 12, "file_name": "b.jpg", "height": 32, "width": 24},
             {"id": 13, "file_name": "c.jpg", "height": 40, "width": 48}],
  "annotations": [
    {"image_id": 11, "bbox": [2.5, 3.25, 20, 14], "category_id": 4, "area": 133.5,
     "segmentation": [[2.5, 3.25, 22.5, 3.25, 12, 17.25]]},
    {"image_id": 11, "bbox": [30, 20, 30, 10], "category_id": 7, "area": 12},
    {"image_id": 12, "bbox": [1, 2, 12, 20], "category_id": 4, "area": 55,
     "segmentation": [[1, 2, 13, 2, 13, 10], [1, 14, 13, 22, 1, 22]]},
    {"image_id": 12, "bbox": [0, 0, 2, 2], "category_id": 9, "iscrowd": 1, "area": 4,
     "segmentation": {"size": [32, 24], "counts": [0, 2, 30, 2, 734]}}],
  "categories": [{"id": 4, "name": "four"}, {"id": 7, "name": "seven"}]
})";

class DetectionShardDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_ / "images");
    WriteBytes(dir_ / "images/a.jpg", Photo(48, 40, 1));
    WriteBytes(dir_ / "images/b.jpg", Photo(24, 32, 2));
    WriteBytes(dir_ / "images/c.jpg", Photo(48, 40, 3));
    const std::string json = kCoco;
    WriteBytes(dir_ / "ann.json", std::vector<uint8_t>(json.begin(), json.end()));
  }

  // Packs the COCO set as `feedline pack` does, its records from the dataset.
  std::string Pack() {
    auto coco = std::make_shared<vision::CocoDetection>(dir_ / "images", dir_ / "ann.json",
                                                        Pipeline({}));
    vision::ImageList files;
    for (int64_t i = 0; i < coco->size(); ++i) files.Add(coco->Source(i), 0);
    PackOptions options;
    options.shard_bytes = 4096;  // a shard per record
    options.annotations = [coco](int64_t file, const vision::ImageInfo& image) {
      return coco->Record(file, image.height, image.width);
    };
    const PackResult result = PackImages("ann.json", "", files, {}, dir_ / "pack", options);
    EXPECT_EQ(result.records, 3);
    EXPECT_EQ(result.shards, 3);
    return dir_ / "pack";
  }

  TempDir dir_;
};

std::vector<Pipeline> Pipelines() {
  return {Pipeline({Transform::RandomHorizontalFlip(0.5), Transform::Resize(20)}),
          Pipeline({Transform::RandomZoomOut({9, 9, 9}), Transform::RandomIoUCrop(),
                    Transform::RandomHorizontalFlip(0.5), Transform::Resize(24, 24)})};
}

// Every field of sample `index`, bytes and shape.
std::vector<std::pair<std::string, std::vector<uint8_t>>> Fields(const Dataset& data,
                                                                 int64_t index, uint64_t seed) {
  SampleContext ctx(seed, /*epoch=*/0, index);
  Sample sample;
  data.Get(index, sample, ctx);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> fields;
  for (int i = 0; i < sample.num_fields(); ++i) {
    const Tensor& t = sample.field(i);
    const uint8_t* p = static_cast<const uint8_t*>(t.raw());
    std::vector<uint8_t> bytes(p, p + t.bytes());
    for (int64_t d : t.shape()) bytes.push_back(static_cast<uint8_t>(d));
    fields.emplace_back(sample.field_name(i), std::move(bytes));
  }
  return fields;
}

TEST_F(DetectionShardDatasetTest, APackGivesTheSourceDatasetsSamples) {
  const std::string pack = Pack();
  EXPECT_EQ(ReadShardIndex(pack + "/shard-000001.idx").version, kShardIndexVersionAnnotated);
  for (const Pipeline& pipeline : Pipelines()) {
    for (bool keep_crowd : {false, true}) {
      vision::CocoDetectionOptions coco_options;
      coco_options.masks = true;
      coco_options.keep_crowd = keep_crowd;
      const vision::CocoDetection coco(dir_ / "images", dir_ / "ann.json", pipeline,
                                       coco_options);
      DetectionShardOptions options;
      options.masks = true;
      options.keep_crowd = keep_crowd;
      const DetectionShardDataset packed(ShardDataset::Find(pack), pipeline, options);
      ASSERT_EQ(packed.size(), 3);
      EXPECT_EQ(packed.Source(1), pack + "/shard-000001.tar:000000001");
      EXPECT_EQ(packed.PaddedFields(), coco.PaddedFields());
      for (int64_t i = 0; i < 3; ++i) {
        for (uint64_t seed = 0; seed < 6; ++seed) {
          EXPECT_EQ(Fields(packed, i, seed), Fields(coco, i, seed)) << i << " " << seed;
        }
      }
    }
  }
  DetectionShardOptions skip;
  skip.skip_empty = true;
  const DetectionShardDataset trained(ShardDataset::Find(pack), Pipelines()[0], skip);
  ASSERT_EQ(trained.size(), 2);
  EXPECT_EQ(trained.record(1), 1);
}

TEST_F(DetectionShardDatasetTest, AMosaicTakesItsPartnersFromThePack) {
  const std::string pack = Pack();
  const Pipeline pipeline({Transform::RandomHorizontalFlip(0.5)});
  vision::CocoDetectionOptions coco_options;
  coco_options.mosaic = vision::MosaicOptions{32};
  const vision::CocoDetection coco(dir_ / "images", dir_ / "ann.json", pipeline, coco_options);
  DetectionShardOptions options;
  options.mosaic = vision::MosaicOptions{32};
  const DetectionShardDataset packed(ShardDataset::Find(pack), pipeline, options);
  for (int64_t i = 0; i < 3; ++i) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      EXPECT_EQ(Fields(packed, i, seed), Fields(coco, i, seed)) << i << " " << seed;
    }
  }
  // With masks (polygons, several polygons, a run-length mask, none: its
  // box), drawn through the tiles alike.
  options.masks = true;
  coco_options.masks = true;
  const vision::CocoDetection coco_masks(dir_ / "images", dir_ / "ann.json", pipeline,
                                         coco_options);
  const DetectionShardDataset packed_masks(ShardDataset::Find(pack), pipeline, options);
  int drawn = 0;
  for (int64_t i = 0; i < 3; ++i) {
    for (uint64_t seed = 0; seed < 4; ++seed) {
      const auto fields = Fields(packed_masks, i, seed);
      EXPECT_EQ(fields, Fields(coco_masks, i, seed)) << i << " " << seed;
      for (const auto& [name, bytes] : fields) {
        if (name == "masks") drawn += static_cast<int>(std::count(bytes.begin(), bytes.end() - 3, 1));
      }
    }
  }
  EXPECT_GT(drawn, 0);
  options.source_masks = true;
  EXPECT_THAT([&] { DetectionShardDataset(ShardDataset::Find(pack), pipeline, options); },
              ::testing::ThrowsMessage<Error>(HasSubstr("masks at the source's size")));
}

TEST_F(DetectionShardDatasetTest, AnnotationsThatDoNotDecodeAreAFailedSampleNamingTheRecord) {
  const std::vector<uint8_t> image = Photo(16, 16, 0);
  const std::string good = vision::EncodeDetectionRecord(vision::DetectionRecord{});
  const std::string bad = "FLDR and then no record at all";
  {
    ShardWriter writer(dir_ / "shard-000000.tar", dir_ / "shard-000000.idx", 0);
    writer.Add("000000000", image, vision::ImageFormat::kJpeg, 0, {},
               {std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(good.data()),
                                         good.size())});
    writer.Add("000000001", image, vision::ImageFormat::kJpeg, 0, {},
               {std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bad.data()),
                                         bad.size())});
    writer.Finish();
  }
  const DetectionShardDataset packed({dir_ / "shard-000000.idx"}, Pipeline({}));
  SampleContext ctx(0, 0, 0);
  Sample sample;
  packed.Get(0, sample, ctx);
  EXPECT_EQ(sample["boxes"].shape(), (Shape{0, 4}));
  try {
    packed.Get(1, sample, ctx);
    FAIL() << "no error";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kDecode);
    EXPECT_EQ(e.source(), dir_ / "shard-000000.tar:000000001");
    EXPECT_THAT(e.message(), HasSubstr("annotations: damaged record"));
    EXPECT_THAT(e.message(), HasSubstr("key 000000001"));
  }
}

// The index keeps each image's size as the annotations list it, for
// grouping by aspect ratio without reading an image.
TEST_F(DetectionShardDatasetTest, TheIndexKeepsEachImagesListedSize) {
  const std::string pack = Pack();
  const DetectionShardDataset packed(ShardDataset::Find(pack), Pipeline({}));
  ASSERT_EQ(packed.size(), 3);
  EXPECT_EQ(packed.image_size(0), (std::pair<uint32_t, uint32_t>{40, 48}));
  EXPECT_EQ(packed.image_size(1), (std::pair<uint32_t, uint32_t>{32, 24}));
  EXPECT_EQ(packed.image_size(2), (std::pair<uint32_t, uint32_t>{40, 48}));
  DetectionShardOptions skip;
  skip.skip_empty = true;  // image 13 has no objects
  const DetectionShardDataset skipping(ShardDataset::Find(pack), Pipeline({}), skip);
  ASSERT_EQ(skipping.size(), 2);
  EXPECT_EQ(skipping.image_size(1), (std::pair<uint32_t, uint32_t>{32, 24}));
}

// A pack written before the index kept sizes (version 3) still loads; only
// asking for a size is an error, naming the shard and telling how to mend it.
TEST_F(DetectionShardDatasetTest, AVersionThreePackHasNoImageSizesAndSaysSo) {
  const std::string pack = Pack();
  const std::string index_file = pack + "/shard-000001.idx";
  ShardIndex index = ReadShardIndex(index_file);
  index.version = 3;
  for (ShardRecord& r : index.records) r.image_height = r.image_width = 0;
  WriteBytes(index_file, SerializeShardIndex(index));
  const DetectionShardDataset packed(ShardDataset::Find(pack), Pipeline({}));
  EXPECT_EQ(packed.image_size(0), (std::pair<uint32_t, uint32_t>{40, 48}));
  EXPECT_THAT([&] { packed.image_size(1); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr(pack + "/shard-000001.tar: record 000000001: the index holds no "
                                   "image size (a detection pack written before index version "
                                   "4); pack the source again")));
  const vision::CocoDetection coco(dir_ / "images", dir_ / "ann.json", Pipeline({}));
  EXPECT_EQ(Fields(packed, 1, 3), Fields(coco, 1, 3));
}

TEST_F(DetectionShardDatasetTest, APackOfImagesAloneIsRefusedNamingTheShardAndRecord) {
  {
    ShardWriter writer(dir_ / "shard-000000.tar", dir_ / "shard-000000.idx", 0);
    writer.Add("000000000", Photo(16, 16, 0), vision::ImageFormat::kJpeg, 0);
    writer.Finish();
  }
  EXPECT_THAT(
      [&] { DetectionShardDataset({dir_ / "shard-000000.idx"}, Pipeline({})); },
      ::testing::ThrowsMessage<Error>(HasSubstr(
          dir_ / "shard-000000.tar: record 000000000 has no annotations: this is a pack of "
                 "images alone")));
}

}  // namespace
}  // namespace feedline::storage
