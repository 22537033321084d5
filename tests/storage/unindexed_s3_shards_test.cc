// Tars without indexes in S3 (a real SeaweedFS on loopback): a brace list
// of s3:// URLs is indexed on first read and gives the indexed pack's
// batches, through ranged GETs and through the node's cache.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::BatchesOf;
using testing::SeaweedFsServer;
using testing::TempDir;

constexpr const char* kS3AwsVariables[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "HOME"};

class UnindexedS3ShardsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TempDir();
    vision::WriteSyntheticImageFolder(*folder_ / "images", 20, /*classes=*/4, /*seed=*/5,
                                      /*broken=*/0);
    PackOptions options;
    options.shard_bytes = 200 << 10;
    shards_ = PackSource(*folder_ / "images", *folder_ / "pack", options).shards;
    server_ = new SeaweedFsServer();
    server_->Start();
    for (const fs::directory_entry& entry : fs::directory_iterator(*folder_ / "pack")) {
      if (entry.path().extension() == ".tar") {
        server_->Put("wds/" + entry.path().filename().string(), entry.path());
      }
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete folder_;
    folder_ = nullptr;
  }
  void SetUp() override {
    for (const char* name : kS3AwsVariables) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      ::unsetenv(name);
    }
    ::setenv("AWS_ACCESS_KEY_ID", SeaweedFsServer::kAccessKey, 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", SeaweedFsServer::kSecretKey, 1);
    ::setenv("AWS_ENDPOINT_URL", server_->Endpoint().c_str(), 1);
    ::setenv("AWS_REGION", "us-east-1", 1);
    ::setenv("HOME", home_.path().c_str(), 1);
  }
  void TearDown() override {
    for (const char* name : kS3AwsVariables) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }

  static RemoteOptions Quick() {
    RemoteOptions options;
    options.max_attempts = 3;
    options.backoff_s = 0.01;
    return options;
  }
  static std::shared_ptr<ShardDataset> Open(const std::string& source,
                                            const RemoteOptions& options = {}) {
    return std::make_shared<ShardDataset>(ShardDataset::Find(source, options),
                                          vision::TrainPipeline(40, DType::kU8),
                                          std::vector<std::string>{}, 0, options);
  }
  static std::string BraceList() {
    char last[16];
    std::snprintf(last, sizeof(last), "%06lld", static_cast<long long>(shards_ - 1));
    return std::string("s3://feedline/wds/shard-{000000..") + last + "}.tar";
  }

  static TempDir* folder_;
  static SeaweedFsServer* server_;
  static int64_t shards_;
  std::map<std::string, std::string> saved_;
  TempDir home_;
  TempDir cache_;
};

TempDir* UnindexedS3ShardsTest::folder_ = nullptr;
SeaweedFsServer* UnindexedS3ShardsTest::server_ = nullptr;
int64_t UnindexedS3ShardsTest::shards_ = 0;

TEST_F(UnindexedS3ShardsTest, ABraceListOfS3TarsGivesTheIndexedPacksBatches) {
  ASSERT_GT(shards_, 1);
  const std::vector<std::vector<uint8_t>> want = BatchesOf(Open(*folder_ / "pack"), 0);
  const auto served = Open(BraceList(), Quick());
  EXPECT_EQ(served->shards().front(), "s3://feedline/wds/shard-000000.tar");
  EXPECT_EQ(BatchesOf(served, 3), want);
  RemoteOptions cached = Quick();
  cached.cache_dir = cache_ / "cache";
  EXPECT_EQ(BatchesOf(Open(BraceList(), cached), 2), want);
  if (testing::kWorkerProcesses) {
    EXPECT_EQ(BatchesOf(Open(BraceList(), cached), 2, WorkerMode::kProcess), want);
  }
}

TEST_F(UnindexedS3ShardsTest, AKeyWithNeitherIndexNorTarIsAnErrorNamingIt) {
  EXPECT_THAT(
      [&] { Open("s3://feedline/wds/shard-{000000..000099}.tar", Quick()); },
      ::testing::ThrowsMessage<Error>(HasSubstr(".idx: cannot open shard index, nor is ")));
}

}  // namespace
}  // namespace feedline::storage
