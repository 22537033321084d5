#include "feedline/vision/annotation_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "vision/vision_testing.h"

namespace feedline::vision {
namespace {

namespace fs = std::filesystem;

std::string Coco(int id, const std::string& file) {
  return R"({"images": [{"id": )" + std::to_string(id) + R"(, "file_name": ")" + file +
         R"(", "height": 4, "width": 3}], "annotations": [{"id": 1, "image_id": )" +
         std::to_string(id) + R"(, "bbox": [0, 0, 2, 2], "category_id": 1}], "categories": []})";
}

void WriteIndexText(const std::string& path, const std::string& text) {
  testing::WriteBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string ReadIndexText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The one index file in `dir`.
std::string OnlyIndex(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) found.push_back(entry.path().string());
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? "" : found[0];
}

TEST(AnnotationIndex, TheSecondReadLoadsTheIndexOfTheSameFile) {
  testing::TempDir dir;
  const std::string json = dir / "ann.json";
  const std::string index_dir = dir / "index";
  WriteIndexText(json, Coco(7, "a.jpg"));
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 7);
  const std::string index = OnlyIndex(index_dir);
  // What the second read returns comes from the index: an index holding
  // other arrays (under the same file's header) is what it returns.
  const std::string text = ReadIndexText(index);
  const std::string arrays = CocoAnnotations::Parse(Coco(7, "a.jpg"), "x").ToIndex();
  ASSERT_EQ(text.substr(text.size() - arrays.size()), arrays);
  const std::string header = text.substr(0, text.size() - arrays.size());
  WriteIndexText(index, header + CocoAnnotations::Parse(Coco(8, "b.jpg"), "x").ToIndex());
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 8);
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).file_name(0), "b.jpg");
}

TEST(AnnotationIndex, AChangedFileOrADamagedIndexIsParsedAgainAndTheIndexRewritten) {
  testing::TempDir dir;
  const std::string json = dir / "ann.json";
  const std::string index_dir = dir / "index";
  WriteIndexText(json, Coco(7, "a.jpg"));
  ReadCocoAnnotations(json, index_dir);
  const std::string index = OnlyIndex(index_dir);

  WriteIndexText(json, Coco(9, "c.jpg"));  // another size
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 9);
  EXPECT_EQ(OnlyIndex(index_dir), index);
  WriteIndexText(json, Coco(5, "c.jpg"));  // the same size, a later time
  fs::last_write_time(json, fs::last_write_time(json) + std::chrono::seconds(2));
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 5);

  std::string text = ReadIndexText(index);
  text[text.size() - 3] ^= 0x7f;  // damaged arrays under a good header
  WriteIndexText(index, text);
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 5);
  EXPECT_NE(ReadIndexText(index), text);  // rewritten
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 5);
}

TEST(AnnotationIndex, NoFolderOrOneThatCannotBeWrittenOnlyCostsTheParse) {
  testing::TempDir dir;
  const std::string json = dir / "ann.json";
  WriteIndexText(json, Coco(7, "a.jpg"));
  EXPECT_EQ(ReadCocoAnnotations(json, "").image(0).id, 7);
  WriteIndexText(dir / "a_file", "x");
  EXPECT_EQ(ReadCocoAnnotations(json, dir / "a_file/index").image(0).id, 7);
  try {
    ReadCocoAnnotations(dir / "missing.json", dir / "index");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("missing.json: cannot be read"));
  }
}

}  // namespace
}  // namespace feedline::vision
