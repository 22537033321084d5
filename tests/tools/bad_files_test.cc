// End-to-end tests of the `feedline` command over bad and unusual files and
// arguments: FIFOs and devices named like images, files that are no images,
// an image given as SOURCE, a folder where everything is broken, absurd
// sizes and the limits. Each run is bounded in time and checked for its exit
// code and its exact message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;
using testing::MakeImageFolder;
using ::testing::Not;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

// No run here needs more than a few seconds; a hang is killed after this.
constexpr double kTimeoutS = 60;

// The lines of stderr; a clean failure prints exactly one.
std::vector<std::string> ErrLines(const RunResult& r) { return RunResult::Lines(r.err); }

void ExpectOneCleanErrorLine(const RunResult& r, const std::string& command) {
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("terminate called")));
  const std::vector<std::string> lines = ErrLines(r);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_THAT(lines[0], ::testing::StartsWith(command + ": error: "));
  for (char c : r.err) {
    EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "raw byte in: " << r.err;
  }
}

// A synthetic folder of 8 images, plus a FIFO named x.jpg and a symlink to
// /dev/zero named y.jpg in the first class folder.
struct FolderWithSpecialFiles {
  ScratchDir dir;
  std::string root = dir / "imgs";
  std::string fifo = root + "/class_000/x.jpg";
  std::string device = root + "/class_000/y.jpg";

  FolderWithSpecialFiles() {
    MakeImageFolder(root, 8);
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::filesystem::create_symlink("/dev/zero", device);
  }
};

TEST(BadFiles, VerifyNamesAFifoAndADeviceAndFinishes) {
  FolderWithSpecialFiles folder;
  const RunResult r = RunFeedline({"verify", folder.root, "--threads", "2"}, kTimeoutS);
  ASSERT_FALSE(r.timed_out) << "verify hung on a FIFO or a device";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("broken: " + folder.fifo + ": io: is a FIFO, not a regular file\n"));
  EXPECT_THAT(r.out, HasSubstr("broken: " + folder.device +
                               ": io: is a character device, not a regular file\n"));
  EXPECT_THAT(r.out, HasSubstr("feedline verify: 10 files, 8 ok, 2 broken (io: 2)"));
}

TEST(BadFiles, BenchNamesAFifoAndADeviceAndFinishes) {
  FolderWithSpecialFiles folder;
  for (const std::string pipeline : {"train", "read"}) {
    const RunResult r = RunFeedline({"bench", folder.root, "--pipeline", pipeline, "--batch", "4",
                                     "--workers", "2", "--size", "32", "--quiet", "--json"},
                                    kTimeoutS);
    ASSERT_FALSE(r.timed_out) << pipeline << ": bench hung on a FIFO or a device";
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("broken: " + folder.fifo + ": io: is a FIFO, not a regular file"));
    EXPECT_THAT(r.out, HasSubstr("broken: " + folder.device +
                                 ": io: is a character device, not a regular file"));
    const nlohmann::json j = r.Json();
    // value(): a missing key fails the check instead of asserting.
    EXPECT_EQ(j.value("images", -1), 8) << pipeline;
    EXPECT_EQ(j.value("errors", nlohmann::json::object()).value("io", -1), 2) << pipeline;
    EXPECT_EQ(j.value("broken_files_total", -1), 2) << pipeline;
    EXPECT_EQ(j.value("broken_files", nlohmann::json::array()).size(), 2u);
  }
}

// 500 MB of zeros named x.jpg (a sparse file) fails from its first bytes:
// the run neither reads nor holds it.
TEST(BadFiles, AHugeFileThatIsNoImageFailsFromItsFirstBytes) {
  ScratchDir dir;
  MakeImageFolder(dir / "imgs", 4);
  const std::string zeros = dir / "imgs/class_001/x.jpg";
  { std::ofstream create(zeros); }
  std::filesystem::resize_file(zeros, 500'000'000);
  const RunResult r = RunFeedline(
      {"bench", dir / "imgs", "--pipeline", "read", "--workers", "1", "--quiet", "--json"},
      kTimeoutS);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j.value("errors", nlohmann::json::object()).value("format", -1), 1);
  EXPECT_LT(j.value("peak_rss_mib", 1e9), 200) << "the file was read";
  EXPECT_THAT(r.out, HasSubstr("broken: " + zeros +
                               ": format: not a JPEG, PNG or WebP image (first bytes: 00 00 00 00 "
                               "00 00 00 00)"));
}

TEST(BadFiles, FilesOverMaxFileBytesAndImagesOverMaxPixelsAreBroken) {
  ScratchDir dir;
  MakeImageFolder(dir / "imgs", 4);
  RunResult r = RunFeedline({"verify", dir / "imgs", "--max-file-bytes", "100"}, kTimeoutS);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("4 broken (too_large: 4)"));
  EXPECT_THAT(r.out, HasSubstr("over the limit of 100 bytes (max_file_bytes)"));
  r = RunFeedline({"verify", dir / "imgs", "--max-pixels", "1000"}, kTimeoutS);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("4 broken (too_large: 4)"));
  EXPECT_THAT(r.out, HasSubstr("pixels, over the limit of 1000"));
  r = RunFeedline(
      {"bench", dir / "imgs", "--max-pixels", "1000", "--size", "16", "--quiet", "--json"},
      kTimeoutS);
  EXPECT_EQ(r.exit_code, 1) << "no image loaded";
  // The default limits pass them all.
  r = RunFeedline({"verify", dir / "imgs"}, kTimeoutS);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* bad : {"0", "-5", "lots"}) {
    r = RunFeedline({"verify", dir / "imgs", "--max-pixels", bad}, kTimeoutS);
    EXPECT_EQ(r.exit_code, 2) << bad;
    ExpectOneCleanErrorLine(r, "feedline verify");
    EXPECT_THAT(r.err, HasSubstr("--max-pixels"));
    r = RunFeedline({"bench", dir / "imgs", "--max-file-bytes", bad}, kTimeoutS);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--max-file-bytes"));
  }
}

// Before, this ended in "terminate called after throwing an instance of
// 'std::bad_alloc'" and exit code 134.
TEST(BadFiles, AnAbsurdSizeIsOneLineAndANonZeroExit) {
  ScratchDir dir;
  MakeImageFolder(dir / "imgs", 4);
  RunResult r = RunFeedline({"bench", dir / "imgs", "--size", "30000", "--quiet"}, kTimeoutS);
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneCleanErrorLine(r, "feedline bench");
  EXPECT_THAT(r.err, HasSubstr("--size 30000 makes images of 900000000 pixels, over --max-pixels "
                               "89478485"));
  // Allowed by the pixel limit, the batches would not fit in memory.
  r = RunFeedline({"bench", dir / "imgs", "--size", "30000", "--max-pixels", "1000000000",
                   "--workers", "2", "--prefetch", "2", "--quiet"},
                  kTimeoutS);
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneCleanErrorLine(r, "feedline bench");
  EXPECT_THAT(r.err, HasSubstr("a batch of 64 samples takes 691.2 GB and 4 batches are kept in "
                               "flight: more than the "));
  EXPECT_THAT(r.err, HasSubstr("lower --size, --batch, --workers or --prefetch"));
  r = RunFeedline({"tune", dir / "imgs", "--size", "30000", "--quiet"}, kTimeoutS);
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneCleanErrorLine(r, "feedline tune");
}

TEST(BadFiles, AnImageGivenAsSourceIsNoFileList) {
  ScratchDir dir;
  MakeImageFolder(dir / "imgs", 4);
  const std::string jpeg = testing::FilesUnder(dir / "imgs").front();
  for (const std::string command : {"verify", "bench", "tune"}) {
    const RunResult r = RunFeedline({command, dir / "imgs" + "/" + jpeg, "--quiet"}, kTimeoutS);
    EXPECT_EQ(r.exit_code, 2) << command;
    ExpectOneCleanErrorLine(r, "feedline " + command);
    EXPECT_THAT(r.err, HasSubstr("SOURCE '" + (dir / "imgs") + "/" + jpeg +
                                 "' is an image, not an image folder, a file list, packed "
                                 "shards, an HDF5 file or detection data"));
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // pack takes image files only, and says so.
  const RunResult pack = RunFeedline({"pack", dir / "imgs" + "/" + jpeg, dir / "out"}, kTimeoutS);
  EXPECT_EQ(pack.exit_code, 2);
  EXPECT_THAT(pack.err, HasSubstr("' is an image, not a folder or a file list"));
  {
    std::ofstream binary(dir / "data.bin", std::ios::binary);
    binary << "a.jpg 0" << '\0' << "\xff\xfe";
  }
  const RunResult r = RunFeedline({"verify", dir / "data.bin"}, kTimeoutS);
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneCleanErrorLine(r, "feedline verify");
  EXPECT_THAT(r.err, HasSubstr("is a binary file, not an image folder, a file list, packed "
                               "shards, an HDF5 file or detection data"));
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const RunResult fifo = RunFeedline({"verify", dir / "fifo"}, kTimeoutS);
  EXPECT_EQ(fifo.exit_code, 2);
  ExpectOneCleanErrorLine(fifo, "feedline verify");
  EXPECT_THAT(fifo.err, HasSubstr("SOURCE '" + (dir / "fifo") +
                                  "' is a FIFO, not an image folder, a file list, packed "
                                  "shards, an HDF5 file or detection data"));
}

// Skip over a folder where nothing loads is no benchmark: it says so on
// stderr and exits 1 (it used to report success with 0 images).
TEST(BadFiles, BenchOverAFullyBrokenFolderFails) {
  ScratchDir dir;
  for (const char* name : {"a/1.jpg", "a/2.jpg", "b/3.png"}) {
    std::filesystem::create_directories(std::filesystem::path(dir / name).parent_path());
    std::ofstream(dir / name) << "not an image";
  }
  const RunResult r = RunFeedline(
      {"bench", dir.path().string(), "--batch", "2", "--workers", "1", "--quiet"}, kTimeoutS);
  EXPECT_EQ(r.exit_code, 1);
  ExpectOneCleanErrorLine(r, "feedline bench");
  EXPECT_THAT(r.err, HasSubstr("no image was loaded: all 3 samples failed (format: 3)"));
  EXPECT_THAT(r.out, HasSubstr("0 images in 0 batches"));
  // Under replace, every substitute fails too: the run ends, and the message
  // does not suggest the policy already in use.
  const RunResult replace = RunFeedline({"bench", dir.path().string(), "--batch", "2", "--workers",
                                         "1", "--quiet", "--error-policy", "replace"},
                                        kTimeoutS);
  EXPECT_EQ(replace.exit_code, 1);
  ExpectOneCleanErrorLine(replace, "feedline bench");
  EXPECT_THAT(replace.err, HasSubstr("under --error-policy replace"));
  EXPECT_THAT(replace.err, Not(HasSubstr("--error-policy skip or replace goes on")));
  // tune does not recommend a setting from runs that loaded nothing.
  const RunResult tune = RunFeedline(
      {"tune", dir.path().string(), "--max-workers", "1", "--prefetch", "1", "--quiet"}, kTimeoutS);
  EXPECT_EQ(tune.exit_code, 1);
  ExpectOneCleanErrorLine(tune, "feedline tune");
  EXPECT_THAT(tune.err,
              HasSubstr("no image was loaded: the 3 samples tried all failed (format: 3)"));
  EXPECT_THAT(tune.out, Not(HasSubstr("recommended")));
}

}  // namespace
}  // namespace feedline::cli
