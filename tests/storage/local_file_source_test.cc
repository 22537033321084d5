// LocalFileSource: a local file as a ByteSource, opened for each read.
#include "src/storage/local_file_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "tests/storage/byte_source_testing.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::PatternBytes;
using testing::Streamed;
using testing::TempDir;
using testing::WriteBytes;

TEST(LocalFileSourceTest, ReadsSizeRangesStreamsAndWholeFiles) {
  TempDir dir;
  const std::vector<uint8_t> bytes = PatternBytes(3 * ByteSource::kStreamPiece + 17);
  WriteBytes(dir / "file", bytes);
  const LocalFileSource source(dir / "file");
  EXPECT_EQ(source.name(), dir / "file");
  EXPECT_EQ(source.Size(), bytes.size());
  std::vector<uint8_t> range(100);
  source.ReadRange(bytes.size() - 100, range.size(), range.data());
  EXPECT_EQ(range, std::vector<uint8_t>(bytes.end() - 100, bytes.end()));
  source.ReadRange(0, 0, nullptr);  // nothing asked
  EXPECT_EQ(Streamed(source, 5, bytes.size() - 5),
            std::vector<uint8_t>(bytes.begin() + 5, bytes.end()));
  EXPECT_EQ(source.ReadAll(bytes.size()), bytes);
  EXPECT_THAT([&] { source.ReadAll(bytes.size() - 1); },
              ::testing::ThrowsMessage<Error>(HasSubstr(dir / "file" + ": ")));
}

TEST(LocalFileSourceTest, AMissingFileIsNulloptThenAFileNotFoundNamingIt) {
  TempDir dir;
  const LocalFileSource source(dir / "absent");
  std::string missing;
  EXPECT_EQ(source.Size(&missing), std::nullopt);
  EXPECT_EQ(missing, "No such file or directory");
  EXPECT_EQ(source.ReadAll(100), std::nullopt);
  try {
    source.ThrowMissing(dir / "other", "the message");
    FAIL() << "ThrowMissing returned";
  } catch (const OsError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
    EXPECT_EQ(e.path(), dir / "other");
    EXPECT_STREQ(e.what(), "the message");
  }
  uint8_t byte = 0;
  EXPECT_THROW(source.ReadRange(0, 1, &byte), OsError);
}

TEST(LocalFileSourceTest, ReadsPastTheEndAndFoldersAreErrorsNamingTheFile) {
  TempDir dir;
  WriteBytes(dir / "short", PatternBytes(10));
  const LocalFileSource source(dir / "short");
  std::vector<uint8_t> range(8);
  EXPECT_THAT([&] { source.ReadRange(5, range.size(), range.data()); },
              ::testing::ThrowsMessage<Error>(HasSubstr(dir / "short" + ": ends early")));
  EXPECT_THAT([&] { LocalFileSource(dir.path().string()).Size(); },
              ::testing::ThrowsMessage<Error>(HasSubstr(": not a regular file")));
}

}  // namespace
}  // namespace feedline::storage
