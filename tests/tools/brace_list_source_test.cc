// A brace list of shards as SOURCE (tools/source.h): `feedline bench` reads
// WebDataset-style tars named by one, with or without their indexes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "feedline/storage/pack.h"
#include "tests/tools/run_feedline.h"
#include "tools/source.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ScratchDir;

TEST(BraceListSource, NamesShardsForBenchWithOrWithoutTheirIndexes) {
  ScratchDir dir;
  testing::MakeImageFolder(dir / "imgs", 12);
  storage::PackOptions options;
  options.shard_bytes = 64 << 10;
  const int64_t shards = storage::PackSource(dir / "imgs", dir / "pack", options).shards;
  ASSERT_GE(shards, 2);
  const std::string list = dir / "pack/shard-{000000..000001}.tar";
  SourceArgs args;
  args.source = list;
  EXPECT_EQ(ParseSource(args).kind, SourceKind::kShards);
  // Without the indexes: indexed on first read.
  fs::remove(dir / "pack/shard-000000.idx");
  fs::remove(dir / "pack/shard-000001.idx");
  const testing::RunResult run = testing::RunFeedline({"bench", list, "--epochs", "1"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  // Past the last shard: the missing one named.
  const testing::RunResult past =
      testing::RunFeedline({"bench", dir / "pack/shard-{000000..000099}.tar", "--epochs", "1"});
  EXPECT_NE(past.exit_code, 0);
  EXPECT_THAT(past.err, HasSubstr("cannot open shard index"));
}

}  // namespace
}  // namespace feedline::cli
