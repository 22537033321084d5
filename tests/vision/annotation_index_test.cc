#include "feedline/vision/annotation_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
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

// The index file's inode: a read that parses writes a new file (renamed
// into place), one that loads the index leaves it.
uint64_t IndexInode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<uint64_t>(st.st_ino);
}

TEST(AnnotationIndex, TheSecondReadLoadsTheIndexOfTheSameFile) {
  testing::TempDir dir;
  const std::string json = dir / "ann.json";
  const std::string index_dir = dir / "index";
  WriteIndexText(json, Coco(7, "a.jpg"));
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 7);
  const std::string index = OnlyIndex(index_dir);
  const uint64_t written = IndexInode(index);
  const CocoAnnotations loaded = ReadCocoAnnotations(json, index_dir);
  EXPECT_EQ(IndexInode(index), written);  // loaded, not parsed and written again
  EXPECT_EQ(loaded.ToIndex(), CocoAnnotations::Parse(Coco(7, "a.jpg"), "x").ToIndex());
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
  // The same size, its modification time set back: the change time tells.
  const auto before = fs::last_write_time(json);
  WriteIndexText(json, Coco(5, "c.jpg"));
  fs::last_write_time(json, before);
  EXPECT_EQ(ReadCocoAnnotations(json, index_dir).image(0).id, 5);

  // Every byte of the arrays changed in turn: never a wrong object, always
  // parsed again and rewritten.
  const std::string good = ReadIndexText(index);
  const std::string arrays = CocoAnnotations::Parse(Coco(5, "c.jpg"), "x").ToIndex();
  ASSERT_EQ(good.substr(good.size() - arrays.size()), arrays);
  for (size_t at = good.size() - arrays.size(); at < good.size(); at += 7) {
    std::string damaged = good;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
    WriteIndexText(index, damaged);
    EXPECT_EQ(ReadCocoAnnotations(json, index_dir).ToIndex(), arrays) << at;
    EXPECT_EQ(ReadIndexText(index), good) << at;
  }
}

TEST(AnnotationIndex, AFifoWhereTheIndexWouldBeIsPassedOverNotWaitedOn) {
  testing::TempDir dir;
  const std::string json = dir / "ann.json";
  WriteIndexText(json, Coco(7, "a.jpg"));
  ReadCocoAnnotations(json, dir / "index");
  const std::string index = OnlyIndex(dir / "index");
  fs::remove(index);
  ASSERT_EQ(::mkfifo(index.c_str(), 0644), 0);
  EXPECT_EQ(ReadCocoAnnotations(json, dir / "index").image(0).id, 7);
}

TEST(AnnotationIndex, ReadersStartingTogetherAllGetTheFilesObjects) {
  // Ranks of a job start at once: each may parse and write, none may read
  // half an index. Threads here, the index deleted now and then to make
  // writers race readers.
  testing::TempDir dir;
  const std::string json = dir / "ann.json";
  const std::string index_dir = dir / "index";
  WriteIndexText(json, Coco(7, "a.jpg"));
  const std::string want = CocoAnnotations::Parse(Coco(7, "a.jpg"), "x").ToIndex();
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        if (t == 0 && round % 5 == 0) {
          std::error_code ec;
          fs::remove_all(index_dir, ec);
        }
        if (ReadCocoAnnotations(json, index_dir).ToIndex() != want) ++wrong;
      }
    });
  }
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(wrong.load(), 0);
  for (const auto& entry : fs::directory_iterator(index_dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
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
