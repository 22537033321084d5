// PackManifest: the one reader of a pack's pack.txt.
#include "src/storage/pack_manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;

constexpr const char* kHead = "source /data/images\nfiles 24\nshard_bytes 204800\n";

TEST(PackManifestTest, AFinishedManifestGivesItsValuesHeadAndShardCount) {
  const PackManifest manifest(std::string(kHead) + "records 24\nshards 3\n");
  EXPECT_TRUE(manifest.finished());
  EXPECT_EQ(manifest.Value("source"), "/data/images");
  EXPECT_EQ(manifest.Value("records"), "24");
  EXPECT_EQ(manifest.Value("absent"), "");
  EXPECT_EQ(manifest.head(), kHead);
  EXPECT_EQ(manifest.ShardCount("http://host/train/"), 3);
}

TEST(PackManifestTest, AnUnfinishedManifestIsItsHeadAndHasNoShardCount) {
  const PackManifest manifest(kHead);
  EXPECT_FALSE(manifest.finished());
  EXPECT_EQ(manifest.head(), kHead);
  EXPECT_THAT([&] { manifest.ShardCount("http://host/train/"); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("http://host/train/: the pack is unfinished")));
  EXPECT_EQ(PackManifest("").head(), "");
}

TEST(PackManifestTest, ABadShardCountIsAnErrorNamingIt) {
  for (const char* count : {"0", "-2", "3x", "many"}) {
    const PackManifest manifest(std::string(kHead) + "records 24\nshards " + count + "\n");
    EXPECT_THAT([&] { manifest.ShardCount("http://host/train/"); },
                ::testing::ThrowsMessage<Error>(HasSubstr(
                    "http://host/train/pack.txt: bad shard count '" + std::string(count) + "'")));
  }
}

// A head is what comes before the counts only: a line between the head and
// the counts makes another head (what a resume refuses).
TEST(PackManifestTest, TheHeadEndsWhereTheCountsBegin) {
  const PackManifest other(std::string(kHead) + "jpeg_restart_rows 0\nrecords 24\nshards 3\n");
  EXPECT_NE(other.head(), kHead);
  EXPECT_EQ(other.head(), std::string(kHead) + "jpeg_restart_rows 0\n");
}

}  // namespace
}  // namespace feedline::storage
