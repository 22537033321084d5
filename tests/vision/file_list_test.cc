#include "feedline/vision/file_list.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/synth/synth.h"
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

std::string ListFileError(const std::string& list_file) {
  try {
    FileList::ReadListText(list_file);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// A JPEG or a binary file given as the list is refused as a whole, not
// parsed into lines of raw bytes.
TEST(FileList, AnImageOrBinaryFileIsNoList) {
  testing::TempDir dir;
  testing::WriteBytes(dir / "x.jpg", SynthesizeJpeg(20, 20, 83));
  EXPECT_EQ(ListFileError(dir / "x.jpg"),
            "FileList: '" + (dir / "x.jpg") +
                "' is an image (jpeg), not a file list (lines of 'path label')");
  testing::WriteBytes(dir / "data.bin", {'a', ' ', '1', '\n', 0, 1, 2});
  EXPECT_EQ(ListFileError(dir / "data.bin"),
            "FileList: '" + (dir / "data.bin") +
                "' is a binary file (it holds NUL bytes), not a file list (lines of 'path label')");
  EXPECT_THROW(FileList(dir / "x.jpg", dir.path(), TrainPipeline()), Error);
}

TEST(FileList, ABadLineShowsNoRawBytes) {
  const std::string message = ParseError("a.jpg 0\n\xff\xd8\x1b[2J\x01 cat\n");
  EXPECT_NE(message.find("list.txt:2:"), std::string::npos) << message;
  EXPECT_NE(message.find("'\\xff\\xd8\\x1b[2J\\x01 cat'"), std::string::npos) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  const std::string long_line(500, 'a');
  const std::string cut = ParseError(long_line + "\n");
  EXPECT_NE(cut.find(std::string(80, 'a') + "...'"), std::string::npos) << cut;
  EXPECT_EQ(cut.find(std::string(81, 'a')), std::string::npos) << cut;
}

TEST(FileList, AFifoAsTheListIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "list.txt").c_str(), 0600), 0);
  auto error = std::async(std::launch::async, [&] { return ListFileError(dir / "list.txt"); });
  if (error.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "reading a FIFO blocked";
    const int fd = ::open((dir / "list.txt").c_str(), O_WRONLY | O_NONBLOCK);  // releases it
    if (fd >= 0) ::close(fd);
  }
  EXPECT_EQ(error.get(), "FileList: cannot read list file '" + (dir / "list.txt") +
                             "': is a FIFO, not a regular file");
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
