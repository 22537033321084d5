#include "feedline/vision/file_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/vision/synth.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

std::string ParseError(const std::string& text) {
  try {
    FileList::Parse(text, "list.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(FileList, ParsesPathsAndLabels) {
  const ImageList files = FileList::Parse(
      "# comment\n"
      "a/1.jpg 0\n"
      "\n"
      "  b/with space.jpg\t12  \r\n"
      "/abs/x.png 3\r\n"
      "last.jpg 1",
      "list.txt");
  ASSERT_EQ(files.size(), 4);
  EXPECT_EQ(files.path(0), "a/1.jpg");
  EXPECT_EQ(files.path(1), "b/with space.jpg");
  EXPECT_EQ(files.path(2), "/abs/x.png");
  EXPECT_EQ(files.path(3), "last.jpg");
  EXPECT_EQ(files.labels(), (std::vector<int64_t>{0, 12, 3, 1}));
}

TEST(FileList, BadLinesNameFileAndLine) {
  EXPECT_NE(ParseError("a.jpg 0\nb.jpg\n").find("list.txt:2: expected 'path label'"),
            std::string::npos);
  EXPECT_NE(ParseError("a.jpg 0\n\n# x\nb.jpg cat\n")
                .find("list.txt:4: the label 'cat' is not a non-negative integer in 'b.jpg cat'"),
            std::string::npos);
  EXPECT_NE(ParseError("a.jpg -1\n").find("list.txt:1:"), std::string::npos);
  EXPECT_NE(ParseError("a.jpg 1.5\n").find("list.txt:1:"), std::string::npos);
  EXPECT_NE(ParseError("# only comments\n\n").find("lists no files"), std::string::npos);
}

TEST(FileList, LoadsSamples) {
  testing::TempDir dir;
  testing::WriteBytes(dir / "img/a.jpg", SynthesizeJpeg(50, 40, 81));
  testing::WriteBytes(dir / "img/b.jpg", SynthesizeJpeg(40, 50, 82));
  const std::string list = "img/a.jpg 2\n" + (dir / "img/b.jpg") + " 0\n";
  std::vector<uint8_t> bytes(list.begin(), list.end());
  testing::WriteBytes(dir / "list.txt", bytes);
  FileList data(dir / "list.txt", dir.path(), ValPipeline(36, 32));
  ASSERT_EQ(data.size(), 2);
  EXPECT_EQ(data.classes(), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(data.labels(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(data.Source(0), dir / "img/a.jpg");
  EXPECT_EQ(data.Source(1), dir / "img/b.jpg");  // absolute stays as is
  Sample sample;
  SampleContext ctx(0, 0, 0);
  data.Get(1, sample, ctx);
  EXPECT_EQ(sample["image"].shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(*sample["label"].data<int64_t>(), 0);
}

TEST(FileList, MissingListFileIsAnError) {
  testing::TempDir dir;
  try {
    FileList data(dir / "missing.txt", dir.path(), TrainPipeline());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "missing.txt"), std::string::npos);
  }
}

}  // namespace
}  // namespace feedline::vision
