// End-to-end tests of `feedline pack` and of `feedline verify` on shards.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "feedline/storage/shard_index.h"
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;
using testing::FilesUnder;
using ::testing::HasSubstr;
using testing::MakeImageFolder;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte ^= 0x20;
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
}

TEST(PackCommand, PacksThenVerifyChecksTheShards) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 12);
  const RunResult packed =
      RunFeedline({"pack", dir / "images", dir / "shards", "--shard-size", "150K", "--json"});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const nlohmann::json json = packed.Json();
  EXPECT_EQ(json["records"], 12);
  EXPECT_GE(json["shards"].get<int>(), 2);
  EXPECT_TRUE(fs::exists(dir / "shards/shard-000000.tar"));
  EXPECT_TRUE(fs::exists(dir / "shards/shard-000000.idx"));

  const RunResult verified = RunFeedline({"verify", dir / "shards"});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  EXPECT_THAT(verified.out, HasSubstr("12 files, 12 ok, 0 broken"));

  // A damaged record: verify lists it with its shard, key and offset.
  const storage::ShardIndex index = storage::ReadShardIndex(dir / "shards/shard-000001.idx");
  const storage::ShardRecord& record = index.records[0];
  FlipByte(dir / "shards/shard-000001.tar", record.offset + 100);
  const RunResult damaged = RunFeedline({"verify", dir / "shards"});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_THAT(damaged.out, HasSubstr("broken: " + (dir / "shards/shard-000001.tar") + ":" +
                                     record.key + ": checksum: CRC-32C mismatch"));
  EXPECT_THAT(damaged.out, HasSubstr("offset " + std::to_string(record.offset)));

  // A damaged index: a failure naming the file.
  FlipByte(dir / "shards/shard-000000.idx", 60);
  const RunResult bad_index = RunFeedline({"verify", dir / "shards"});
  EXPECT_EQ(bad_index.exit_code, 1);
  EXPECT_THAT(bad_index.err, HasSubstr("shard-000000.idx: index checksum mismatch"));
}

TEST(PackCommand, ResumesAnInterruptedPack) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 12);
  ASSERT_EQ(RunFeedline({"pack", dir / "images", dir / "shards", "--shard-size", "150K"}).exit_code,
            0);
  fs::remove(dir / "shards/shard-000001.idx");
  const RunResult again =
      RunFeedline({"pack", dir / "images", dir / "shards", "--shard-size", "150K", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.Json()["reused_shards"], 1);
  EXPECT_EQ(again.Json()["records"], 12);
  const RunResult other = RunFeedline({"pack", dir / "images", dir / "shards"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.err, HasSubstr("pass --restart"));
}

// Progressive JPEGs are written as baseline ones by default, and stored
// unchanged with --keep-progressive (seed 5 writes 7 among 24 images).
TEST(PackCommand, ProgressiveJpegsBecomeBaselineUnlessKept) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 24, /*broken=*/0, /*seed=*/5);
  const RunResult converted = RunFeedline({"pack", dir / "images", dir / "a", "--json"});
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  EXPECT_THAT(converted.out, HasSubstr("progressive ones written as baseline"));
  const nlohmann::json a = converted.Json();
  EXPECT_EQ(a["progressive_converted"], 7);
  EXPECT_GT(a["progressive_bytes_after"].get<uint64_t>(), 0u);
  const RunResult kept =
      RunFeedline({"pack", dir / "images", dir / "b", "--keep-progressive", "--json"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  const nlohmann::json b = kept.Json();
  EXPECT_EQ(b["progressive_converted"], 0);
  EXPECT_EQ(b["rewritten_jpegs"].get<int>(), a["rewritten_jpegs"].get<int>() - 7);
  // Resuming with the other setting is refused: the shards would mix.
  const RunResult mixed = RunFeedline({"pack", dir / "images", dir / "a", "--keep-progressive"});
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_THAT(mixed.err, HasSubstr("progressive JPEG setting"));
}

TEST(PackCommand, BadArgumentsAreUsageErrors) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 4);
  const RunResult no_out = RunFeedline({"pack", dir / "images"});
  EXPECT_EQ(no_out.exit_code, 2);
  const RunResult tiny = RunFeedline({"pack", dir / "images", dir / "out", "--shard-size", "100"});
  EXPECT_EQ(tiny.exit_code, 2);
  EXPECT_THAT(tiny.err, HasSubstr("--shard-size"));
  const RunResult missing = RunFeedline({"pack", dir / "missing", dir / "out"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));
}

// The size rule (feedline/byte_size.h): MB is 1000-based, MiB and M 1024-based.
TEST(PackCommand, ShardSizeReadsMBAsMillionAndMiBAsPowerOfTwo) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 48);  // about 2.4 MB of JPEGs, up to 200 kB each
  struct Run {
    const char* size;
    uint64_t bytes;
  };
  for (const Run& run : {Run{"1MB", 1000000}, Run{"1MiB", 1048576}, Run{"1 m", 1048576},
                         Run{"0.5mb", 500000}, Run{"1000000", 1000000}}) {
    SCOPED_TRACE(run.size);
    const std::string out = dir / ("shards-" + std::to_string(run.bytes));
    const RunResult packed = RunFeedline(
        {"pack", dir / "images", out, "--shard-size", run.size, "--restart", "--quiet"});
    ASSERT_EQ(packed.exit_code, 0) << packed.err;
    EXPECT_THAT(testing::ReadWhole(out + "/pack.txt"),
                HasSubstr("\nshard_bytes " + std::to_string(run.bytes) + "\n"));
    uint64_t largest = 0;
    for (const auto& entry : fs::directory_iterator(out)) {
      if (entry.path().extension() == ".tar") largest = std::max(largest, entry.file_size());
    }
    EXPECT_LE(largest, run.bytes);
    // Filled up to the limit less one image: with these images a 1MiB shard
    // is larger than 1MB would allow.
    EXPECT_GT(largest, run.bytes - 200 * 1000);
    if (run.bytes == 1048576) {
      EXPECT_GT(largest, 1000000u);
    }
  }
}

TEST(PackCommand, ByteSizeOptionsNameTheOptionAndTheValue) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 4);
  const RunResult unit = RunFeedline({"pack", dir / "images", dir / "out", "--shard-size", "5X"});
  EXPECT_EQ(unit.exit_code, 2);
  EXPECT_THAT(unit.err, HasSubstr("--shard-size: \"5X\" is not a size: unknown unit \"x\""));
  const RunResult small = RunFeedline({"pack", dir / "images", dir / "out", "--shard-size", "1KB"});
  EXPECT_EQ(small.exit_code, 2);
  EXPECT_THAT(small.err,
              HasSubstr("--shard-size: must be from 2KiB to 1PiB, got \"1KB\" (1000 bytes)"));
  const RunResult file =
      RunFeedline({"pack", dir / "images", dir / "out", "--max-file-bytes", "-1K"});
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_THAT(file.err, HasSubstr("--max-file-bytes: \"-1K\" is negative"));
  EXPECT_FALSE(fs::exists(dir / "out"));
  // Every other spelling of the rule is accepted, here a limit that refuses
  // each image (a broken file stops the pack: exit 1, not a usage error).
  const RunResult tiny = RunFeedline(
      {"pack", dir / "images", dir / "out", "--max-file-bytes", "0.001 KiB", "--quiet"});
  EXPECT_EQ(tiny.exit_code, 1) << tiny.err;
  EXPECT_THAT(tiny.err, HasSubstr("over the limit of 1 bytes"));
  const RunResult help = RunFeedline({"pack", "--help"});
  EXPECT_THAT(help.out, HasSubstr("--shard-size BYTES=256MiB"));
  EXPECT_THAT(help.out, HasSubstr("KB, MB, GB, TB are 1000-based"));
}

TEST(PackCommand, AFileThatIsNoImageStopsThePackUnlessSkipped) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 6);
  const std::string broken = dir / "images/class_001/zz_text.jpg";
  std::ofstream(broken) << "plain text, not a JPEG";
  const RunResult stopped = RunFeedline({"pack", dir / "images", dir / "a"});
  EXPECT_EQ(stopped.exit_code, 1);
  EXPECT_THAT(stopped.err, HasSubstr(broken + ": cannot be packed"));
  const RunResult skipped = RunFeedline({"pack", dir / "images", dir / "b", "--skip-broken"});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_THAT(skipped.out, HasSubstr("skipped: " + broken));
  EXPECT_THAT(skipped.out, HasSubstr("feedline pack: 6 images"));
}

// Packing into the image folder, or a folder inside it, would mix the shards
// with the images (and the folder would then read as a pack): refused before
// anything is written, naming both paths, also through a link.
TEST(PackCommand, RefusesAnOutThatIsOrIsInsideTheSourceFolder) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 6);
  const std::vector<std::string> before = FilesUnder(dir / "images");
  fs::create_directory_symlink(dir / "images", dir / "alias");
  const std::vector<std::pair<std::string, std::string>> refused = {
      {dir / "images", "is the source folder " + (dir / "images")},
      {dir / "images/", "is the source folder"},
      {dir / "images/class_001", "is inside the source folder " + (dir / "images")},
      {dir / "images/new/shards", "is inside the source folder"},
      {dir / "alias", "is the source folder"},
      {dir / "alias/class_000", "is inside the source folder"},
  };
  for (const auto& [out, reason] : refused) {
    const RunResult run = RunFeedline({"pack", dir / "images", out});
    EXPECT_EQ(run.exit_code, 1) << out;
    EXPECT_THAT(run.err, HasSubstr("pack: OUT " + out + " " + reason)) << out;
    EXPECT_THAT(run.err, HasSubstr("choose an OUT outside")) << out;
  }
  EXPECT_EQ(FilesUnder(dir / "images"), before);  // nothing written into it
  EXPECT_FALSE(fs::exists(dir / "images/new"));

  // A name that merely begins like the source's is outside it, and so is a
  // folder holding the source (the pack writes only its own top-level files).
  const RunResult beside = RunFeedline({"pack", dir / "images", dir / "images_shards"});
  EXPECT_EQ(beside.exit_code, 0) << beside.err;
  const RunResult above = RunFeedline({"pack", dir / "images", dir.path().string()});
  EXPECT_EQ(above.exit_code, 0) << above.err;
  EXPECT_EQ(FilesUnder(dir / "images"), before);
  EXPECT_EQ(RunFeedline({"verify", dir.path().string()}).exit_code, 0);
}

// A file list: OUT may not be the list's folder or a folder holding listed
// files; a new folder beside or below the list is fine.
TEST(PackCommand, RefusesAnOutHoldingTheFileListOrItsFiles) {
  ScratchDir dir;
  MakeImageFolder(dir / "data/images", 4);
  std::ofstream list(dir / "data/train.txt");
  for (const std::string& file : FilesUnder(dir / "data/images")) {
    list << "images/" << file << " 1\n";
  }
  list.close();
  const std::string first_folder =
      dir / ("data/images/" + fs::path(FilesUnder(dir / "data/images")[0]).parent_path().string());
  const RunResult in_list_folder = RunFeedline({"pack", dir / "data/train.txt", dir / "data"});
  EXPECT_EQ(in_list_folder.exit_code, 1);
  EXPECT_THAT(in_list_folder.err,
              HasSubstr("pack: OUT " + (dir / "data") + " is the folder of the file list " +
                        (dir / "data/train.txt")));
  const RunResult in_image_folder = RunFeedline({"pack", dir / "data/train.txt", first_folder});
  EXPECT_EQ(in_image_folder.exit_code, 1);
  EXPECT_THAT(in_image_folder.err,
              HasSubstr("is the folder of files listed in " + (dir / "data/train.txt")));
  EXPECT_FALSE(fs::exists(dir / "data/pack.txt"));
  EXPECT_FALSE(fs::exists(first_folder + "/pack.txt"));
  const RunResult below = RunFeedline({"pack", dir / "data/train.txt", dir / "data/shards"});
  EXPECT_EQ(below.exit_code, 0) << below.err;
}

// Two packs into one folder: the second fails at once naming the folder
// while the first holds its lock (here the test holds it, as a running pack
// would); the lock file left behind does not hinder a resume or verify.
TEST(PackCommand, ASecondPackIntoTheSameFolderFailsAtOnce) {
  ScratchDir dir;
  MakeImageFolder(dir / "images", 8);
  fs::create_directories(dir / "shards");
  const std::string lock_path = dir / "shards/.pack.lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const auto start = std::chrono::steady_clock::now();
  const RunResult locked = RunFeedline({"pack", dir / "images", dir / "shards"}, 20);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));  // no wait
  EXPECT_EQ(locked.exit_code, 1);
  EXPECT_THAT(locked.err,
              HasSubstr(dir / "shards" + ": another pack is writing to this folder (it holds " +
                        lock_path + ")"));
  EXPECT_FALSE(fs::exists(dir / "shards/pack.txt"));
  EXPECT_FALSE(fs::exists(dir / "shards/shard-000000.tar"));
  ::close(fd);

  const RunResult packed =
      RunFeedline({"pack", dir / "images", dir / "shards", "--shard-size", "150K"});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  fs::remove(dir / "shards/shard-000001.idx");
  const RunResult resumed =
      RunFeedline({"pack", dir / "images", dir / "shards", "--shard-size", "150K", "--json"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.Json()["reused_shards"], 1);
  const RunResult verified = RunFeedline({"verify", dir / "shards"});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_THAT(verified.out, HasSubstr("8 files, 8 ok, 0 broken"));
}

}  // namespace
}  // namespace feedline::cli
