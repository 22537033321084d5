// `feedline pack` of detection data: each layout packed with its images'
// annotations (index version 4, a KEY.det member per record), read back by
// DetectionShardDataset as the source dataset's objects; image folders
// still pack as before.
#include "tools/pack_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>

#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/detection_shard_dataset.h"
#include "feedline/storage/shard_index.h"
#include "feedline/vision/voc_detection.h"
#include "tests/tools/detection_layouts.h"
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;
using testing::MakeCoco;
using testing::MakeImageFolder;
using testing::MakeVoc;
using testing::MakeYolo;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

// The boxes and labels of sample `index`, as text.
std::string ObjectsOf(const Dataset& data, int64_t index) {
  SampleContext ctx(0, 0, index);
  Sample sample;
  data.Get(index, sample, ctx);
  const Tensor& boxes = sample["boxes"];
  const Tensor& labels = sample["labels"];
  std::string text = "id " + std::to_string(*sample["image_id"].data<int64_t>());
  for (int64_t i = 0; i < boxes.elements(); ++i) {
    text += " " + std::to_string(boxes.data<float>()[i]);
  }
  for (int64_t i = 0; i < labels.elements(); ++i) {
    text += " l" + std::to_string(labels.data<int64_t>()[i]);
  }
  return text;
}

TEST(PackSource, EachDetectionLayoutIsPackedWithItsAnnotations) {
  ScratchDir dir;
  const std::string coco = MakeCoco(dir / "coco", 3);
  const std::string voc = MakeVoc(dir / "voc", 2);
  const std::string yolo = MakeYolo(dir / "yolo", 4);
  for (const std::string& source : {coco, voc, yolo}) {
    const std::string out = dir / ("pack-" + std::to_string(source.size()));
    const RunResult r = RunFeedline({"pack", source, out, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const storage::ShardIndex index = storage::ReadShardIndex(out + "/shard-000000.idx");
    EXPECT_EQ(index.version, storage::kShardIndexVersionAnnotated);
    for (const storage::ShardRecord& record : index.records) {
      EXPECT_GT(record.annotation_size, 0u);
      EXPECT_TRUE(record.has_usable_box);
    }
  }
  // VOC's boxes, labels and ids come back as VocDetection gives them.
  const std::string voc_pack = dir / ("pack-" + std::to_string(voc.size()));
  const vision::VocDetection source(dir / "voc/VOC2012", "train", vision::Pipeline({}));
  const storage::DetectionShardDataset packed(storage::ShardDataset::Find(voc_pack),
                                              vision::Pipeline({}));
  ASSERT_EQ(packed.size(), 2);
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(ObjectsOf(packed, i), ObjectsOf(source, i));
}

TEST(PackSource, ABadLabelLineEndsThePackNamingItOrIsSkipped) {
  ScratchDir dir;
  const std::string yolo = MakeYolo(dir / "yolo", 3, /*bad=*/1);
  const RunResult failed = RunFeedline({"pack", yolo, dir / "out"});
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_THAT(failed.err, HasSubstr("1.jpg: cannot be packed: annotations: "));
  EXPECT_THAT(failed.err, HasSubstr("labels/train/1.txt"));
  EXPECT_THAT(failed.err, HasSubstr("line 2"));
  const RunResult skipped = RunFeedline({"pack", yolo, dir / "out", "--skip-broken", "--restart"});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_THAT(skipped.out, HasSubstr("2 images in 1 shards"));
}

// OUT in a folder of the source's images would mix the shards and pack.txt
// with them: refused, naming the folder and an image, for each layout.
TEST(PackSource, ADetectionPackIntoAFolderOfItsImagesIsRefused) {
  ScratchDir dir;
  const std::string coco = MakeCoco(dir / "coco", 2);
  const std::string voc = MakeVoc(dir / "voc", 2);
  const std::string yolo = MakeYolo(dir / "yolo", 2);
  const std::pair<std::string, std::string> cases[] = {
      {coco, dir / "coco/val2017"},
      {voc, dir / "voc/VOC2012/JPEGImages"},
      {yolo, yolo}};
  for (const auto& [source, images] : cases) {
    const RunResult r = RunFeedline({"pack", source, images});
    EXPECT_NE(r.exit_code, 0) << source;
    EXPECT_THAT(r.err, HasSubstr("OUT " + images + " is the folder of files listed in " + source))
        << r.err;
    EXPECT_FALSE(std::filesystem::exists(images + "/pack.txt")) << source;
    // A new folder inside it is fine: its files are no images to any listing.
    const RunResult inside = RunFeedline({"pack", source, images + "/pack"});
    EXPECT_EQ(inside.exit_code, 0) << inside.err;
  }
}

TEST(PackSource, AnImageFolderIsPackedWithoutAnnotations) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 4);
  const RunResult r = RunFeedline({"pack", dir / "images", dir / "out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(storage::ReadShardIndex(dir / "out/shard-000000.idx").version,
            storage::kShardIndexVersion);
}

}  // namespace
}  // namespace feedline::cli
