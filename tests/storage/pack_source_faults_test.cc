// Faults injected under a pack's reads (ByteSourceWrapper over the real
// sources of OpenPackStore: local files, nginx, nginx through the node's
// cache), seen through the API users call (ShardDataset, DataLoader): a
// range that fails mid-epoch is one failed sample under the error policy;
// bytes that arrive damaged are a checksum failure, which the cache repairs
// by fetching its copy again; a tar shorter than its index is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/storage/shard_index.h"
#include "src/storage/byte_source.h"
#include "src/storage/pack_store.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/served_pack.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::BatchesOf;
using testing::QuickRetries;

constexpr uint64_t kFaultTarBlock = 512;

std::vector<uint8_t> FaultedImageOf(const Dataset& data, int64_t index) {
  SampleContext ctx(/*seed=*/7, /*epoch=*/0, index);
  Sample sample;
  data.Get(index, sample, ctx);
  const Tensor& image = sample["image"];
  const uint8_t* p = static_cast<const uint8_t*>(image.raw());
  return std::vector<uint8_t>(p, p + image.bytes());
}

std::vector<std::string> TarsOfIndexes(const std::vector<std::string>& indexes) {
  std::vector<std::string> tars;
  for (const std::string& index : indexes) {
    tars.push_back(index.substr(0, index.size() - 4) + ".tar");
  }
  return tars;
}

// Reads of one range of one tar fail: every time, or only the first
// `times` (then the source's own reads).
class FailingRange : public ByteSourceWrapper {
 public:
  FailingRange(std::unique_ptr<ByteSource> target, uint64_t offset, int times)
      : ByteSourceWrapper(std::move(target)), offset_(offset), left_(times) {}
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override {
    if (offset == offset_ && left_.fetch_sub(1) > 0) {
      throw Error(name() + ": bytes " + std::to_string(offset) + ": injected failure");
    }
    ByteSourceWrapper::ReadRange(offset, size, dst);
  }

 private:
  const uint64_t offset_;
  mutable std::atomic<int> left_;
};

// The first `times` reads of one range give its bytes with one bit flipped.
class DamagedRange : public ByteSourceWrapper {
 public:
  DamagedRange(std::unique_ptr<ByteSource> target, uint64_t offset, int times)
      : ByteSourceWrapper(std::move(target)), offset_(offset), left_(times) {}
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override {
    ByteSourceWrapper::ReadRange(offset, size, dst);
    if (offset == offset_ && left_.fetch_sub(1) > 0) dst[size - 1] ^= 0x10;
  }

 private:
  const uint64_t offset_;
  mutable std::atomic<int> left_;
};

// One byte less than the tar holds.
class ShortSource : public ByteSourceWrapper {
 public:
  using ByteSourceWrapper::ByteSourceWrapper;
  std::optional<uint64_t> Size(std::string* missing = nullptr) const override {
    const std::optional<uint64_t> size = ByteSourceWrapper::Size(missing);
    return size ? std::optional<uint64_t>(*size - 1) : size;
  }
};

// The first stream of the sources sharing `broken` (a download; the cache
// opens a source for each) delivers the first half of what it is asked
// for, then fails as a dropped connection would.
class BrokenFirstStream : public ByteSourceWrapper {
 public:
  BrokenFirstStream(std::unique_ptr<ByteSource> target, std::shared_ptr<std::atomic<bool>> broken)
      : ByteSourceWrapper(std::move(target)), broken_(std::move(broken)) {}
  void Stream(uint64_t offset, uint64_t size, const Sink& sink) const override {
    if (broken_->exchange(true)) return ByteSourceWrapper::Stream(offset, size, sink);
    ByteSourceWrapper::Stream(offset, size / 2, sink);
    throw Error(name() + ": injected failure: the connection dropped");
  }

 private:
  const std::shared_ptr<std::atomic<bool>> broken_;
};

class PackSourceFaultsTest : public testing::ServedPackTest {
 protected:
  // Record `record` of shard 1: its place in the dataset, and the range
  // its read asks for (its tar header's offset).
  int64_t Record(const ShardDataset& data, size_t record) const {
    return data.shard_starts()[1] + static_cast<int64_t>(record);
  }
  uint64_t RangeOf(size_t record) const {
    const ShardIndex index = ReadShardIndex(LocalPack() + "/shard-000001.idx");
    return index.records.at(record).offset - kFaultTarBlock;
  }

  // The pack at `indexes`, its shard 1 wrapped by `wrap_shard_one`.
  template <typename MakeWrapper>
  std::shared_ptr<ShardDataset> Open(const std::vector<std::string>& indexes,
                                     const RemoteOptions& options,
                                     MakeWrapper wrap_shard_one) const {
    const std::string shard_one = TarsOfIndexes(indexes).at(1);
    SourceWrap wrap = [shard_one, wrap_shard_one](
                          std::unique_ptr<ByteSource> source) -> std::unique_ptr<ByteSource> {
      if (source->name() != shard_one) return source;
      return wrap_shard_one(std::move(source));
    };
    return std::make_shared<ShardDataset>(
        indexes, OpenPackStore(TarsOfIndexes(indexes), 0, options, std::move(wrap)),
        vision::TrainPipeline(32), std::vector<std::string>{}, options);
  }
  std::shared_ptr<ShardDataset> Local() const {
    return std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                          vision::TrainPipeline(32));
  }
};

TEST_F(PackSourceFaultsTest, ARangeThatFailsMidEpochIsOneSkippedSample) {
  const uint64_t range = RangeOf(2);
  for (const bool remote : {false, true}) {
    SCOPED_TRACE(remote ? "nginx" : "local");
    const std::vector<std::string> indexes =
        remote ? ShardDataset::Find(server_.Url("train/"), QuickRetries())
               : ShardDataset::Find(LocalPack());
    const auto data = Open(indexes, QuickRetries(), [range](std::unique_ptr<ByteSource> source) {
      return std::make_unique<FailingRange>(std::move(source), range, 1 << 20);
    });
    StatsSnapshot stats;
    int64_t rows = 0;
    for (const std::vector<uint8_t>& batch :
         BatchesOf(data, 2, WorkerMode::kThread, ErrorPolicy::kSkip, &stats)) {
      rows += static_cast<int64_t>(batch.size() > 0);
    }
    EXPECT_GT(rows, 0);
    EXPECT_EQ(stats.skipped, 1);
    EXPECT_EQ(stats.errors_by_reason.at("io"), 1);
    try {
      FaultedImageOf(*data, Record(*data, 2));
      ADD_FAILURE() << "a failed range was read";
    } catch (const SampleError& e) {
      EXPECT_EQ(e.reason(), "io");
      EXPECT_THAT(e.message(), HasSubstr("shard-000001.tar"));
      EXPECT_THAT(e.message(), HasSubstr("injected failure"));
    }
    EXPECT_EQ(FaultedImageOf(*data, Record(*data, 3)), FaultedImageOf(*Local(), Record(*data, 3)));
  }
}

// Without a copy to fetch again, damaged bytes are the sample's checksum
// failure; the next read of the record is whole again.
TEST_F(PackSourceFaultsTest, DamagedBytesFromTheServerAreAChecksumFailure) {
  const uint64_t range = RangeOf(1);
  const auto data = Open(ShardDataset::Find(server_.Url("train/"), QuickRetries()),
                         QuickRetries(), [range](std::unique_ptr<ByteSource> source) {
                           return std::make_unique<DamagedRange>(std::move(source), range, 1);
                         });
  const int64_t record = Record(*data, 1);
  try {
    FaultedImageOf(*data, record);
    ADD_FAILURE() << "damaged bytes were delivered";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "checksum");
    EXPECT_THAT(e.message(), HasSubstr("CRC-32C mismatch"));
  }
  EXPECT_EQ(FaultedImageOf(*data, record), FaultedImageOf(*Local(), record));
}

// Through the node's cache, bytes that fail their check make the cache
// fetch its copy of the shard again (once), and the record is delivered
// from the new copy, equal to the local pack's.
TEST_F(PackSourceFaultsTest, DamagedBytesFromTheCacheAreFetchedAgainAndDelivered) {
  const uint64_t range = RangeOf(1);
  const RemoteOptions options = WithCache(QuickRetries());
  const auto data = Open(ShardDataset::Find(server_.Url("train/"), options), options,
                         [range](std::unique_ptr<ByteSource> source) {
                           return std::make_unique<DamagedRange>(std::move(source), range, 1);
                         });
  // The GETs of shard 1 (a download; the dataset's checks are HEADs).
  const std::string tar_uri = "GET /train/shard-000001.tar";
  FaultedImageOf(*data, Record(*data, 0));  // downloads shard 1
  const size_t one_download = server_.Requests(tar_uri, 1);
  ASSERT_GT(one_download, 0u);
  const int64_t record = Record(*data, 1);
  EXPECT_EQ(FaultedImageOf(*data, record), FaultedImageOf(*Local(), record));
  EXPECT_EQ(server_.Requests(tar_uri, 2 * one_download), 2 * one_download);
  // Damaged every time: fetched again once, then the sample's failure.
  const uint64_t other = RangeOf(2);
  const auto always = Open(ShardDataset::Find(server_.Url("train/"), options), options,
                           [other](std::unique_ptr<ByteSource> source) {
                             return std::make_unique<DamagedRange>(std::move(source), other,
                                                                   1 << 20);
                           });
  EXPECT_THROW(FaultedImageOf(*always, Record(*always, 2)), SampleError);
  EXPECT_THROW(FaultedImageOf(*always, Record(*always, 2)), SampleError);
  EXPECT_EQ(server_.Requests(tar_uri, 3 * one_download), 3 * one_download);
}

// The cache downloads through its inner source: a download that breaks
// midway fails the sample that waited for it (io), and the next read
// resumes it from where it broke and delivers the local pack's record.
TEST_F(PackSourceFaultsTest, ADownloadBrokenMidwayFailsOneSampleAndIsResumed) {
  const RemoteOptions options = WithCache(QuickRetries());
  const auto broken = std::make_shared<std::atomic<bool>>(false);
  const auto data = Open(ShardDataset::Find(server_.Url("train/"), options), options,
                         [broken](std::unique_ptr<ByteSource> source) {
                           return std::make_unique<BrokenFirstStream>(std::move(source), broken);
                         });
  const int64_t record = Record(*data, 0);
  try {
    FaultedImageOf(*data, record);
    ADD_FAILURE() << "a record of a broken download was read";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "io");
    EXPECT_THAT(e.message(), HasSubstr("the connection dropped"));
  }
  EXPECT_EQ(FaultedImageOf(*data, record), FaultedImageOf(*Local(), record));
  // Two GETs of the tar: its first half, then the rest from there.
  std::vector<std::string> ranges;
  for (const std::string& line : server_.AccessLog()) {
    if (line.find(" GET /train/shard-000001.tar ") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string connection, method, uri, status, range;
    fields >> connection >> method >> uri >> status >> range;
    ranges.push_back(range);
  }
  const uint64_t tar_bytes =
      std::filesystem::file_size(LocalPack() + "/shard-000001.tar");
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], "bytes=0-" + std::to_string(tar_bytes / 2 - 1));
  EXPECT_EQ(ranges[1], "bytes=" + std::to_string(tar_bytes / 2) + "-" +
                           std::to_string(tar_bytes - 1));
}

TEST_F(PackSourceFaultsTest, ATarShorterThanItsIndexIsRefusedNamingIt) {
  for (const bool remote : {false, true}) {
    SCOPED_TRACE(remote ? "nginx" : "local");
    const std::vector<std::string> indexes =
        remote ? ShardDataset::Find(server_.Url("train/"), QuickRetries())
               : ShardDataset::Find(LocalPack());
    EXPECT_THAT(
        [&] {
          Open(indexes, QuickRetries(), [](std::unique_ptr<ByteSource> source) {
            return std::make_unique<ShortSource>(std::move(source));
          });
        },
        ::testing::ThrowsMessage<Error>(
            HasSubstr(TarsOfIndexes(indexes)[1] + ": truncated shard")));
  }
}

}  // namespace
}  // namespace feedline::storage
