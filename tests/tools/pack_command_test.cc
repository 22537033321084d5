// End-to-end tests of `feedline pack` and of `feedline verify` on shards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "feedline/storage/shard_index.h"
#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;
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

}  // namespace
}  // namespace feedline::cli
