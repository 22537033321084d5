// DamagedRecords: the list of a cached shard's records damaged on the
// server, and which byte ranges it covers.
#include "src/storage/damaged_records.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using testing::TempDir;

TEST(DamagedRecords, ARangeIsDamagedIfItOverlapsAListedRecord) {
  TempDir dir;
  const std::string path = DamagedRecordsPathOf(dir / "shard-000002.tar");
  EXPECT_EQ(path, dir / "shard-000002.tar.damaged");
  EXPECT_FALSE(ListsDamage(path, 0, 1 << 20));  // no list: nothing known

  ShardRecord a, b;
  a.offset = 1024;
  a.size = 100;
  a.key = "000000003";
  b.offset = 4096;
  b.size = 10;
  b.key = "a key with spaces";
  const std::string text = DamagedRecordsText({a, b});
  EXPECT_EQ(text, "1024 100 000000003\n4096 10 a key with spaces\n");
  testing::WriteBytes(path, std::vector<uint8_t>(text.begin(), text.end()));
  // A record's read: its 512-byte header, then its bytes.
  EXPECT_TRUE(ListsDamage(path, 512, 612));
  EXPECT_TRUE(ListsDamage(path, 4096 - 512, 522));
  EXPECT_FALSE(ListsDamage(path, 1124, 512));   // the next record
  EXPECT_FALSE(ListsDamage(path, 0, 1024));     // ends where it begins
  EXPECT_FALSE(ListsDamage(path, 4106, 100));
}

}  // namespace
}  // namespace feedline::storage
