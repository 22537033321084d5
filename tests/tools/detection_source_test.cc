// Detection data as a SOURCE: COCO, VOC and YOLO layouts found by FindDetectionSource,
// and `verify` and `bench` end to end on each, the JSON naming the layout
// and a bad image or label naming its file.
#include "tools/detection_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "feedline/synth/encode.h"
#include "tools/command_line.h"
#include "tests/tools/detection_layouts.h"
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunFeedline;
using testing::RunResult;
using testing::MakeCoco;
using testing::MakeVoc;
using testing::MakeYolo;
using testing::WriteJpeg;
using testing::WriteText;
using testing::ScratchDir;

TEST(FindDetectionSource, FindsEachLayoutAndNothingElse) {
  ScratchDir dir;
  const auto coco = FindDetectionSource(MakeCoco(dir / "coco", 2));
  ASSERT_TRUE(coco.has_value());
  EXPECT_EQ(coco->layout, DetectionLayout::kCoco);
  EXPECT_EQ(fs::path(coco->images).filename(), "val2017");
  const auto voc = FindDetectionSource(MakeVoc(dir / "voc", 2));
  ASSERT_TRUE(voc.has_value());
  EXPECT_EQ(voc->layout, DetectionLayout::kVoc);
  EXPECT_EQ(voc->image_set, "train");
  const auto yolo = FindDetectionSource(MakeYolo(dir / "yolo", 2));
  ASSERT_TRUE(yolo.has_value());
  EXPECT_EQ(yolo->layout, DetectionLayout::kYolo);
  // A file list, and an images folder without its labels twin, are not detection data.
  WriteText(dir / "list.txt", "a.jpg 0\n");
  EXPECT_FALSE(FindDetectionSource(dir / "list.txt").has_value());
  WriteJpeg(dir / "plain/images/0.jpg", 1);
  EXPECT_FALSE(FindDetectionSource(dir / "plain/images").has_value());
  EXPECT_FALSE(FindDetectionSource(dir / "coco/val2017").has_value());
}

TEST(FindDetectionSource, ACocoFileWithoutItsImagesFolderSaysWhereItLooked) {
  ScratchDir dir;
  const std::string file = MakeCoco(dir / "coco", 1);
  fs::remove_all(dir / "coco/val2017");
  EXPECT_THAT([&] { FindDetectionSource(file); },
              ::testing::ThrowsMessage<UsageError>(HasSubstr((dir / "coco/val2017") +
                                                             " is not a folder")));
}

TEST(DetectionSource, VerifyNamesAnImageTheCocoFileListsButLacks) {
  ScratchDir dir;
  const std::string file = MakeCoco(dir / "coco", 5, /*missing=*/2);
  const RunResult r = RunFeedline({"verify", file, "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["source_kind"], "coco");
  EXPECT_EQ(j["files"], 5);
  EXPECT_EQ(j["ok"], 4);
  ASSERT_EQ(j["broken"].size(), 1u);
  EXPECT_THAT(j["broken"][0]["path"].get<std::string>(), HasSubstr("val2017/2.jpg"));
}

TEST(DetectionSource, VerifyNamesAYoloLabelLineThatIsNotABox) {
  ScratchDir dir;
  const RunResult r = RunFeedline({"verify", MakeYolo(dir / "yolo", 4, /*bad=*/1), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["source_kind"], "yolo");
  EXPECT_EQ(j["ok"], 3);
  ASSERT_EQ(j["broken"].size(), 1u);
  EXPECT_THAT(j["broken"][0]["path"].get<std::string>(), HasSubstr("images/train/1.jpg"));
  EXPECT_THAT(j["broken"][0]["message"].get<std::string>(),
              HasSubstr("labels/train/1.txt: line 2: "));
}

TEST(DetectionSource, BenchReadsEachLayoutWithItsObjects) {
  ScratchDir dir;
  const std::vector<std::pair<std::string, std::string>> sources = {
      {MakeCoco(dir / "coco", 6), "coco"},
      {MakeVoc(dir / "voc", 6), "voc"},
      {MakeYolo(dir / "yolo", 6), "yolo"}};
  for (const auto& [source, kind] : sources) {
    const RunResult r = RunFeedline({"bench", source, "--pipeline", "val", "--size", "32",
                                     "--batch", "2", "--workers", "2", "--quiet", "--json"});
    ASSERT_EQ(r.exit_code, 0) << kind << ": " << r.err;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["source_kind"], kind);
    EXPECT_EQ(j["images"], 6) << kind;
    EXPECT_EQ(j["errors_total"], 0) << kind;
  }
}

TEST(DetectionSource, ReadIsRefusedAsItDecodesNothing) {
  ScratchDir dir;
  const RunResult r = RunFeedline({"bench", MakeYolo(dir / "yolo", 2), "--pipeline", "read",
                                   "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("detection data is read with its objects"));
}

}  // namespace
}  // namespace feedline::cli
