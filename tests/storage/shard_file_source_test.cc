// ShardFileSource: one of a set of local files as a ByteSource, read through
// descriptors that stay open.
#include "src/storage/shard_file_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/storage/shard_files.h"
#include "tests/storage/byte_source_testing.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::PatternBytes;
using testing::TempDir;
using testing::WriteBytes;

TEST(ShardFileSourceTest, ReadsThroughDescriptorsThatStayOpen) {
  TempDir dir;
  const std::vector<uint8_t> bytes = PatternBytes(4096);
  WriteBytes(dir / "a.tar", bytes);
  ShardFiles files({dir / "a.tar", dir / "gone.tar"}, 4);
  const ShardFileSource source(&files, 0);
  EXPECT_EQ(source.Size(), bytes.size());
  EXPECT_EQ(files.open_count(), 0u);  // a size is a stat
  std::vector<uint8_t> range(10);
  source.ReadRange(1000, range.size(), range.data());
  EXPECT_EQ(range, std::vector<uint8_t>(bytes.begin() + 1000, bytes.begin() + 1010));
  source.ReadRange(0, range.size(), range.data());
  EXPECT_EQ(files.open_count(), 1u);  // one descriptor for both reads
  const ShardFileSource gone(&files, 1);
  EXPECT_EQ(gone.Size(), std::nullopt);
  EXPECT_THAT([&] { gone.ReadRange(0, range.size(), range.data()); },
              ::testing::ThrowsMessage<OsError>(HasSubstr("gone.tar: cannot open shard")));
}

}  // namespace
}  // namespace feedline::storage
