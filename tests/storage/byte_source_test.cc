// The defaults that every ByteSource inherits, run over a real local file,
// and ByteSourceWrapper, which forwards every call to the source it wraps.
#include "src/storage/byte_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/storage/local_file_source.h"
#include "tests/storage/byte_source_testing.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::PatternBytes;
using testing::Streamed;
using testing::TempDir;
using testing::WriteBytes;

// The defaults of ByteSource, run over a real file: a wrapper that takes
// them instead of forwarding Stream and ReadAll.
class DefaultsOver : public ByteSourceWrapper {
 public:
  using ByteSourceWrapper::ByteSourceWrapper;
  void Stream(uint64_t offset, uint64_t size, const Sink& sink) const override {
    ByteSource::Stream(offset, size, sink);
  }
  std::optional<std::vector<uint8_t>> ReadAll(uint64_t max_bytes,
                                              std::string* missing = nullptr) const override {
    return ByteSource::ReadAll(max_bytes, missing);
  }
};

TEST(ByteSourceTest, TheDefaultsStreamInPiecesAndReadWholeFilesByTheirSize) {
  TempDir dir;
  const std::vector<uint8_t> bytes = PatternBytes(2 * ByteSource::kStreamPiece + 3);
  WriteBytes(dir / "file", bytes);
  const DefaultsOver source(std::make_unique<LocalFileSource>(dir / "file"));
  size_t pieces = 0;
  EXPECT_EQ(Streamed(source, 1, bytes.size() - 1, &pieces),
            std::vector<uint8_t>(bytes.begin() + 1, bytes.end()));
  EXPECT_EQ(pieces, 3u);
  EXPECT_EQ(source.ReadAll(bytes.size()), bytes);
  EXPECT_THAT([&] { source.ReadAll(10); },
              ::testing::ThrowsMessage<Error>(HasSubstr(dir / "file" + ": ")));
  std::string missing;
  EXPECT_EQ(DefaultsOver(std::make_unique<LocalFileSource>(dir / "absent")).ReadAll(10, &missing),
            std::nullopt);
  EXPECT_EQ(missing, "No such file or directory");
  EXPECT_FALSE(source.Refetch(0, 1));  // a local file has no other copy
}

// A wrapper that overrides nothing is the source it wraps; one that
// overrides a method changes that method alone.
TEST(ByteSourceWrapperTest, ForwardsEveryCallAndAnOverrideChangesOneBehaviour) {
  TempDir dir;
  const std::vector<uint8_t> bytes = PatternBytes(1000);
  WriteBytes(dir / "file", bytes);
  const ByteSourceWrapper plain(std::make_unique<LocalFileSource>(dir / "file"));
  EXPECT_EQ(plain.name(), dir / "file");
  EXPECT_EQ(plain.Size(), bytes.size());
  EXPECT_EQ(plain.ReadAll(bytes.size()), bytes);
  EXPECT_EQ(Streamed(plain, 0, bytes.size()), bytes);
  EXPECT_THROW(plain.ThrowMissing(dir / "x", "x"), OsError);  // the local file's error

  class FailingRanges : public ByteSourceWrapper {
   public:
    using ByteSourceWrapper::ByteSourceWrapper;
    void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override {
      if (offset >= 500) throw Error(name() + ": injected failure");
      ByteSourceWrapper::ReadRange(offset, size, dst);
    }
  };
  const FailingRanges failing(std::make_unique<LocalFileSource>(dir / "file"));
  std::vector<uint8_t> range(10);
  failing.ReadRange(0, range.size(), range.data());
  EXPECT_EQ(range, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 10));
  EXPECT_THAT([&] { failing.ReadRange(600, range.size(), range.data()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("file: injected failure")));
  EXPECT_EQ(failing.Size(), bytes.size());  // the rest is the file's
}

}  // namespace
}  // namespace feedline::storage
