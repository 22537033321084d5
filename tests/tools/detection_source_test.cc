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
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A 48x32 JPEG of colour `shade`.
void WriteJpeg(const std::string& path, int shade) {
  std::vector<uint8_t> rgb(48 * 32 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(shade + i % 7);
  const std::vector<uint8_t> jpeg = vision::EncodeJpeg(rgb, 48, 32);
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
}

// root/val2017/<i>.jpg and root/annotations/instances_val2017.json, one box
// each; image `missing` is listed but not written.
std::string MakeCoco(const std::string& root, int images, int missing = -1) {
  std::string json = R"({"images": [)";
  std::string annotations;
  for (int i = 0; i < images; ++i) {
    const std::string name = std::to_string(i) + ".jpg";
    if (i != missing) WriteJpeg(root + "/val2017/" + name, 20 * i);
    json += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(i + 1) +
            R"(, "file_name": ")" + name + R"(", "height": 32, "width": 48})";
    annotations += (i ? "," : "") + std::string(R"({"id": )") + std::to_string(i + 1) +
                   R"(, "image_id": )" + std::to_string(i + 1) +
                   R"(, "category_id": 3, "iscrowd": 0, "area": 80, "bbox": [2, 3, 10, 8]})";
  }
  json += R"(], "annotations": [)" + annotations + "]}";
  const std::string file = root + "/annotations/instances_val2017.json";
  WriteText(file, json);
  return file;
}

// root/VOC2012 with a "train" set of `images` images, one dog each.
std::string MakeVoc(const std::string& root, int images) {
  std::string ids;
  for (int i = 0; i < images; ++i) {
    const std::string id = "2012_" + std::to_string(i);
    WriteJpeg(root + "/VOC2012/JPEGImages/" + id + ".jpg", 30 * i);
    WriteText(root + "/VOC2012/Annotations/" + id + ".xml",
              "<annotation><size><width>48</width><height>32</height><depth>3</depth></size>"
              "<object><name>dog</name><difficult>0</difficult><bndbox><xmin>2</xmin>"
              "<ymin>3</ymin><xmax>20</xmax><ymax>30</ymax></bndbox></object></annotation>");
    ids += id + "\n";
  }
  const std::string set = root + "/VOC2012/ImageSets/Main/train.txt";
  WriteText(set, ids);
  return set;
}

// root/images/train/<i>.jpg and root/labels/train/<i>.txt; image `bad`'s
// second line is not a box.
std::string MakeYolo(const std::string& root, int images, int bad = -1) {
  for (int i = 0; i < images; ++i) {
    WriteJpeg(root + "/images/train/" + std::to_string(i) + ".jpg", 25 * i);
    WriteText(root + "/labels/train/" + std::to_string(i) + ".txt",
              "1 0.5 0.5 0.25 0.25\n" + std::string(i == bad ? "2 0.5 oops\n" : ""));
  }
  return root + "/images/train";
}

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
