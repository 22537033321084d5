// Shards without an index beside them (WebDataset-style tars, named by a
// folder, a glob or a brace list), local and served by a real nginx on
// loopback: indexed when the dataset is built, they give the batches of the
// same pack with its indexes, with and without the node's cache; what is
// not a shard is an error naming the file or URL and the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/image_folder.h"
#include "src/storage/tar_header.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::BatchesOf;
using testing::NginxServer;
using testing::TempDir;
using testing::WriteBytes;

constexpr int64_t kUnindexedImages = 24;

using testing::QuickRetries;

std::shared_ptr<ShardDataset> Open(const std::string& source, const RemoteOptions& options = {}) {
  return std::make_shared<ShardDataset>(ShardDataset::Find(source, options),
                                        vision::TrainPipeline(40, DType::kU8),
                                        std::vector<std::string>{}, 0, options);
}

std::string ErrorOf(const std::string& source, const RemoteOptions& options = {}) {
  try {
    Open(source, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// One pack for the suite; each test serves a copy of its tars alone (no
// .idx, pack.txt or classes.txt: what a WebDataset writer leaves).
class UnindexedShardsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TempDir();
    vision::WriteSyntheticImageFolder(*folder_ / "images", kUnindexedImages, /*classes=*/4, /*seed=*/5,
                                      /*broken=*/0);
    PackOptions options;
    options.shard_bytes = 200 << 10;
    shards_ = PackSource(*folder_ / "images", *folder_ / "pack", options).shards;
    ASSERT_GT(shards_, 2);
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }

  void SetUp() override {
    fs::create_directories(root_ / "wds");
    for (const fs::directory_entry& entry : fs::directory_iterator(*folder_ / "pack")) {
      if (entry.path().extension() == ".tar") {
        fs::copy_file(entry.path(), root_ / ("wds/" + entry.path().filename().string()));
      }
    }
    server_.Start();
  }

  static std::string LocalPack() { return *folder_ / "pack"; }
  // "PREFIX/shard-{000000..00000N}.tar" over the suite's shards.
  static std::string BraceList(const std::string& prefix) {
    char last[16];
    std::snprintf(last, sizeof(last), "%06lld", static_cast<long long>(shards_ - 1));
    return prefix + "shard-{000000.." + last + "}.tar";
  }
  // GET requests of each tar, by shard file name.
  std::map<std::string, int> TarGets() const {
    std::map<std::string, int> gets;
    for (const std::string& line : server_.AccessLog()) {
      const size_t at = line.find(" GET /wds/shard-");
      if (at == std::string::npos || line.find(".tar ") == std::string::npos) continue;
      const size_t name = line.find("shard-", at);
      ++gets[line.substr(name, line.find(' ', name) - name)];
    }
    return gets;
  }

  static TempDir* folder_;
  static int64_t shards_;
  TempDir root_;
  TempDir cache_;
  NginxServer server_{root_.path().string()};
};

TempDir* UnindexedShardsTest::folder_ = nullptr;
int64_t UnindexedShardsTest::shards_ = 0;

TEST_F(UnindexedShardsTest, LocalTarsWithoutIndexesGiveTheIndexedPacksBatches) {
  const auto indexed = Open(LocalPack());
  const std::vector<std::vector<uint8_t>> want = BatchesOf(indexed, 0);
  const std::string wds = (root_.path() / "wds").string();
  // A folder of tars alone, a glob, a brace list.
  for (const std::string& source : {wds, wds + "/shard-*.tar", BraceList(wds + "/")}) {
    SCOPED_TRACE(source);
    const auto unindexed = Open(source);
    ASSERT_EQ(unindexed->size(), kUnindexedImages);
    EXPECT_EQ(unindexed->labels(), indexed->labels());
    EXPECT_EQ(unindexed->shard_starts(), indexed->shard_starts());
    EXPECT_EQ(BatchesOf(unindexed, 0), want);
    EXPECT_EQ(BatchesOf(unindexed, 3), want);
    if (testing::kWorkerProcesses) EXPECT_EQ(BatchesOf(unindexed, 2, WorkerMode::kProcess), want);
  }
  // Nothing is written beside the tars.
  for (const fs::directory_entry& entry : fs::directory_iterator(wds)) {
    EXPECT_EQ(entry.path().extension(), ".tar") << entry.path();
  }
}

TEST_F(UnindexedShardsTest, ServedTarsInABraceListGiveTheIndexedPacksBatches) {
  const std::vector<std::vector<uint8_t>> want = BatchesOf(Open(LocalPack()), 0);
  // Without a cache: each tar read whole once to index it, then ranged GETs.
  const auto served = Open(BraceList(server_.Url("wds/")), QuickRetries());
  ASSERT_EQ(served->size(), kUnindexedImages);
  EXPECT_EQ(served->shards().front(), server_.Url("wds/shard-000000.tar"));
  EXPECT_EQ(BatchesOf(served, 3), want);
  if (testing::kWorkerProcesses) EXPECT_EQ(BatchesOf(served, 2, WorkerMode::kProcess), want);
  // One whole GET per tar (the indexing) besides the records' ranged ones.
  size_t whole = 0;
  for (const std::string& line : server_.AccessLog()) {
    if (line.find(" GET /wds/shard-") != std::string::npos && line.find(" - ") != std::string::npos) {
      ++whole;
    }
  }
  EXPECT_LE(whole, static_cast<size_t>(shards_));
}

TEST_F(UnindexedShardsTest, WithACacheEachTarIsDownloadedOnceAndItsIndexKept) {
  const std::vector<std::vector<uint8_t>> want = BatchesOf(Open(LocalPack()), 0);
  RemoteOptions cached = QuickRetries();
  cached.cache_dir = cache_ / "cache";
  const auto first = Open(BraceList(server_.Url("wds/")), cached);
  EXPECT_EQ(BatchesOf(first, 3), want);
  if (testing::kWorkerProcesses) EXPECT_EQ(BatchesOf(first, 2, WorkerMode::kProcess), want);
  std::map<std::string, int> gets = TarGets();
  ASSERT_EQ(gets.size(), static_cast<size_t>(shards_));
  for (const auto& [shard, count] : gets) EXPECT_EQ(count, 1) << shard;
  // A later dataset (another rank, or the next run) indexes nothing again
  // and downloads nothing.
  EXPECT_EQ(BatchesOf(Open(BraceList(server_.Url("wds/")), cached), 2), want);
  EXPECT_EQ(TarGets(), gets);
  // A tar evicted from the cache is downloaded again and checked against
  // the index kept for it.
  for (const fs::directory_entry& folder : fs::directory_iterator(cache_ / "cache")) {
    if (!folder.is_directory()) continue;
    fs::remove(folder.path() / "shard-000000.tar");
    EXPECT_TRUE(fs::exists(folder.path() / "shard-000000.idx"));
  }
  EXPECT_EQ(BatchesOf(Open(BraceList(server_.Url("wds/")), cached), 0), want);
  EXPECT_EQ(TarGets().at("shard-000000.tar"), 2);
}

TEST_F(UnindexedShardsTest, WhatIsNotAShardIsAnErrorNamingTheUrlAndTheReason) {
  // A brace list past the last tar: the first missing one named, index and tar.
  EXPECT_THAT(ErrorOf(server_.Url("wds/shard-{000000..000099}.tar"), QuickRetries()),
              HasSubstr(".idx: cannot open shard index, nor is " +
                        server_.Url("wds/shard-0000") ));
  EXPECT_THAT(ErrorOf((root_.path() / "wds/shard-{000000..000099}.tar").string()),
              HasSubstr(".idx: cannot open shard index, nor is "));
  EXPECT_THAT(ErrorOf(server_.Url("wds/{shard-000000.tar,README}"), QuickRetries()),
              HasSubstr("a brace list names shards, ending in .tar or .idx"));
  // A member that is not a sample's: the URL and the member.
  std::vector<uint8_t> tar;
  for (const auto& [name, size] : {std::pair<std::string, size_t>{"notes/readme.txt", 5}}) {
    const TarHeader h = MakeTarHeader(name, size);
    tar.insert(tar.end(), h.begin(), h.end());
    tar.resize(tar.size() + 512 + 1024, 0);
  }
  WriteBytes(root_ / "wds/shard-000001.tar", tar);
  const std::string message = ErrorOf(BraceList(server_.Url("wds/")), QuickRetries());
  EXPECT_THAT(message, HasSubstr(server_.Url("wds/shard-000001.tar") +
                                 ": member notes/readme.txt is not a sample's file"));
  RemoteOptions cached = QuickRetries();
  cached.cache_dir = cache_ / "cache";
  EXPECT_THAT(ErrorOf(BraceList(server_.Url("wds/")), cached),
              HasSubstr(server_.Url("wds/shard-000001.tar") + ": member notes/readme.txt"));
  // A tar cut short on the server.
  fs::resize_file(root_ / "wds/shard-000002.tar", 700);
  fs::copy_file(LocalPack() + "/shard-000001.tar", root_ / "wds/shard-000001.tar",
                fs::copy_options::overwrite_existing);
  EXPECT_THAT(ErrorOf(BraceList(server_.Url("wds/")), QuickRetries()),
              HasSubstr(server_.Url("wds/shard-000002.tar") + ": ends inside member"));
}

}  // namespace
}  // namespace feedline::storage
