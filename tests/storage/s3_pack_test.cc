// PackSource into s3://BUCKET/PREFIX/ on a real SeaweedFS on loopback: the
// bucket ends up holding the local pack's files byte for byte (a shard over
// the part size through a multipart upload) and ShardDataset over it gives
// the local pack's batches; an interrupted pack, or one whose server went
// away, resumes to the same pack, from the staging folder or, without it,
// from the bucket's indexes; wrong credentials and a prefix holding another
// pack fail at once, naming the URL.
#include "src/storage/s3_pack.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "src/storage/http_client.h"
#include "src/storage/s3_upload.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/s3_test_environment.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::BatchesOf;
using testing::S3TestEnvironment;
using testing::SeaweedFsServer;
using testing::TempDir;

constexpr uint64_t kPackToS3ShardBytes = 150 << 10;

class PackToS3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TempDir();
    vision::WriteSyntheticImageFolder(*folder_ / "images", 30, /*classes=*/3, /*seed=*/8,
                                      /*broken=*/0);
    server_ = new SeaweedFsServer();
    server_->Start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete folder_;
    folder_ = nullptr;
  }

  static std::string Images() { return *folder_ / "images"; }

  PackOptions Options(const std::string& staging) const {
    PackOptions options;
    options.shard_bytes = kPackToS3ShardBytes;
    options.threads = 2;
    options.staging_dir = staging;
    options.remote = testing::QuickRetries();
    return options;
  }
  // The local pack of `source` with `options` (but for its staging).
  PackResult PackLocally(const std::string& source, PackOptions options, const std::string& out) {
    options.staging_dir.clear();
    return PackSource(source, out, options);
  }

  // Every file of the local pack `dir` is in the bucket under `prefix`
  // with the same bytes, and the bucket has no shard beyond them.
  void ExpectBucketHolds(const std::string& dir, const std::string& prefix) {
    const HttpClient client(testing::QuickRetries());
    int64_t shards = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name == ".pack.lock") continue;
      if (name.rfind("shard-", 0) == 0 && entry.path().extension() == ".tar") ++shards;
      const std::optional<std::vector<uint8_t>> served =
          client.ReadAll(prefix + name, uint64_t{64} << 20);
      ASSERT_TRUE(served.has_value()) << prefix << name;
      EXPECT_TRUE(*served == testing::ReadBytes(entry.path())) << prefix << name;
    }
    EXPECT_EQ(client.Size(prefix + ShardTarName(shards)), std::nullopt);
    EXPECT_EQ(client.Size(prefix + ShardIndexName(shards)), std::nullopt);
  }

  static std::shared_ptr<ShardDataset> OpenPack(const std::string& location) {
    const RemoteOptions remote = testing::QuickRetries();
    return std::make_shared<ShardDataset>(ShardDataset::Find(location, remote),
                                          vision::TrainPipeline(40, DType::kU8),
                                          std::vector<std::string>{}, 0, remote);
  }

  static TempDir* folder_;
  static SeaweedFsServer* server_;
  S3TestEnvironment env_{*server_};
  TempDir dir_;
};

TempDir* PackToS3Test::folder_ = nullptr;
SeaweedFsServer* PackToS3Test::server_ = nullptr;

TEST_F(PackToS3Test, APackInS3HoldsTheLocalPacksFilesAndGivesItsBatches) {
  const PackOptions options = Options(dir_ / "staging");
  const PackResult local = PackLocally(Images(), options, dir_ / "local");
  ASSERT_GT(local.shards, 2);
  const PackResult uploaded = PackSource(Images(), "s3://feedline/packed/", options);
  EXPECT_EQ(uploaded.records, local.records);
  EXPECT_EQ(uploaded.shards, local.shards);
  EXPECT_EQ(uploaded.bytes, local.bytes);
  EXPECT_EQ(uploaded.reused_shards, 0);
  ExpectBucketHolds(dir_ / "local", "s3://feedline/packed/");
  // Each tar left the staging folder once it was up; the indexes stay.
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_ / "staging")) {
    EXPECT_NE(entry.path().extension(), ".tar") << entry.path();
  }
  EXPECT_EQ(BatchesOf(OpenPack("s3://feedline/packed/"), 2),
            BatchesOf(OpenPack(dir_ / "local"), 0));
  // Run again: every shard is kept, nothing changes.
  const PackResult again = PackSource(Images(), "s3://feedline/packed", options);
  EXPECT_EQ(again.reused_shards, local.shards);
  ExpectBucketHolds(dir_ / "local", "s3://feedline/packed/");
}

TEST_F(PackToS3Test, AShardOverThePartSizeGoesUpWholeInParts) {
  // A shard of 9 MiB and more (so a multipart upload of two parts): a file
  // with a PNG signature is stored as it is (the pack does not decode).
  TempDir source;
  vision::WriteSyntheticImageFolder(source / "images", 6, /*classes=*/2, /*seed=*/9, 0);
  std::vector<uint8_t> large(size_t{9} << 20);
  std::mt19937_64 random(10);
  for (uint8_t& byte : large) byte = static_cast<uint8_t>(random());
  const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::copy(std::begin(png), std::end(png), large.begin());
  testing::WriteBytes(source / "images/class_000/zz_large.png", large);
  PackOptions options = Options(dir_ / "staging");
  options.shard_bytes = uint64_t{16} << 20;
  const PackResult local = PackLocally(source / "images", options, dir_ / "local");
  ASSERT_EQ(local.shards, 1);
  ASSERT_GT(local.bytes, kS3PartBytes);
  PackSource(source / "images", "s3://feedline/large/", options);
  ExpectBucketHolds(dir_ / "local", "s3://feedline/large/");
}

TEST_F(PackToS3Test, AnInterruptedPackResumesFromTheStagingFolderOrTheBucket) {
  const PackResult local = PackLocally(Images(), Options(""), dir_ / "local");
  ASSERT_GT(local.shards, 4);
  // Stopped after its second shard: the bucket holds an unfinished pack,
  // which a reader refuses.
  PackOptions options = Options(dir_ / "staging");
  int finished = 0;
  options.on_progress = [&finished](int64_t, int64_t) {
    if (++finished == 2) throw std::runtime_error("stopped");
  };
  EXPECT_THROW(PackSource(Images(), "s3://feedline/resumed/", options), std::runtime_error);
  EXPECT_THAT([&] { OpenPack("s3://feedline/resumed/"); },
              ThrowsMessage<Error>(HasSubstr("the pack is unfinished")));
  // Resumed on another machine (a new staging folder): the two shards in
  // the bucket are kept, checked against their indexes fetched from it.
  options = Options(dir_ / "staging2");
  finished = 0;
  options.on_progress = [&finished](int64_t, int64_t) {
    if (++finished == 2) throw std::runtime_error("stopped");
  };
  EXPECT_THROW(PackSource(Images(), "s3://feedline/resumed/", options), std::runtime_error);
  // And here again: four kept, the rest packed and uploaded; a multipart
  // upload left under way (as by a pack killed while sending a large
  // shard) is aborted.
  const HttpClient client(testing::QuickRetries());
  client.Send("POST", "s3://feedline/resumed/shard-000004.tar?uploads=");
  options.on_progress = nullptr;
  const PackResult resumed = PackSource(Images(), "s3://feedline/resumed/", options);
  EXPECT_EQ(AbortS3Uploads(client, "s3://feedline/resumed/"), 0);
  EXPECT_EQ(resumed.reused_shards, 4);
  EXPECT_EQ(resumed.shards, local.shards);
  EXPECT_EQ(resumed.records, local.records);
  ExpectBucketHolds(dir_ / "local", "s3://feedline/resumed/");
  EXPECT_EQ(BatchesOf(OpenPack("s3://feedline/resumed/"), 2),
            BatchesOf(OpenPack(dir_ / "local"), 0));
}

TEST_F(PackToS3Test, AServerGoneMidPackFailsNamingTheUrlAndTheRerunFinishesIt) {
  const PackResult local = PackLocally(Images(), Options(""), dir_ / "local");
  PackOptions options = Options(dir_ / "staging");
  options.on_progress = [](int64_t, int64_t) { server_->Stop(); };
  // The requests under way share the outage (host_outages.h) and end
  // together: the first to report may be a shard's or pack.txt's.
  EXPECT_THAT([&] { PackSource(Images(), "s3://feedline/outage/", options); },
              ThrowsMessage<Error>(AllOf(HasSubstr("s3://feedline/outage/"),
                                         HasSubstr("the retry budget of"))));
  server_->Start();
  env_.Set("AWS_ENDPOINT_URL", server_->Endpoint());
  options.on_progress = nullptr;
  const PackResult resumed = PackSource(Images(), "s3://feedline/outage/", options);
  EXPECT_EQ(resumed.shards, local.shards);
  ExpectBucketHolds(dir_ / "local", "s3://feedline/outage/");
}

TEST_F(PackToS3Test, TheDefaultStagingFolderIsNamedAfterTheUrlInTmpdir) {
  const char* saved = std::getenv("TMPDIR");
  const std::string saved_tmpdir = saved == nullptr ? "" : saved;
  ::setenv("TMPDIR", dir_.path().c_str(), 1);
  const std::string staging = S3StagingDir("s3://feedline/a b/train", PackOptions{});
  EXPECT_EQ(fs::path(staging).parent_path(), dir_.path());
  EXPECT_THAT(fs::path(staging).filename().string(),
              ::testing::MatchesRegex("feedline-pack-feedline_a_b_train_-[0-9a-f]{8}"));
  // The same folder with or without the trailing '/'; another for another URL.
  EXPECT_EQ(S3StagingDir("s3://feedline/a b/train/", PackOptions{}), staging);
  EXPECT_NE(S3StagingDir("s3://feedline/a_b/train/", PackOptions{}), staging);
  PackOptions named;
  named.staging_dir = dir_ / "mine";
  EXPECT_EQ(S3StagingDir("s3://feedline/a b/train", named), dir_ / "mine");

  PackOptions options = Options("");
  const PackResult packed = PackSource(Images(), "s3://feedline/defaulted/", options);
  const std::string used = S3StagingDir("s3://feedline/defaulted/", options);
  if (saved == nullptr) {
    ::unsetenv("TMPDIR");
  } else {
    ::setenv("TMPDIR", saved_tmpdir.c_str(), 1);
  }
  EXPECT_TRUE(fs::exists(used + "/pack.txt"));
  EXPECT_TRUE(fs::exists(used + "/" + ShardIndexName(packed.shards - 1)));
  EXPECT_FALSE(fs::exists(used + "/" + ShardTarName(packed.shards - 1)));
}

TEST_F(PackToS3Test, WrongCredentialsFailAtOnceNamingTheUrl) {
  env_.Set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  PackOptions options = Options(dir_ / "staging");
  options.remote.max_attempts = 10;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT([&] { PackSource(Images(), "s3://feedline/denied/", options); },
              ThrowsMessage<Error>(AllOf(HasSubstr("s3://feedline/denied/pack.txt: HTTP 403 "
                                                   "SignatureDoesNotMatch (access refused"),
                                         HasSubstr("(1 attempt in "))));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_THAT([&] { PackSource(Images(), "s3:///denied/", options); },
              ThrowsMessage<Error>(HasSubstr("s3:///denied/: no bucket")));
}

TEST_F(PackToS3Test, APrefixHoldingAnotherPackIsRefusedUnlessRestarted) {
  PackOptions options = Options(dir_ / "staging");
  options.shard_bytes = 60 << 10;
  const PackResult first = PackSource(Images(), "s3://feedline/replaced/", options);
  options.shard_bytes = kPackToS3ShardBytes;
  options.staging_dir = dir_ / "staging2";
  EXPECT_THAT([&] { PackSource(Images(), "s3://feedline/replaced/", options); },
              ThrowsMessage<Error>(HasSubstr(
                  "s3://feedline/replaced/ holds a pack of another source, file count, shard "
                  "size")));
  options.restart = true;
  const PackResult second = PackSource(Images(), "s3://feedline/replaced/", options);
  ASSERT_LT(second.shards, first.shards);
  PackLocally(Images(), options, dir_ / "local");
  // The old pack's further shards are gone.
  ExpectBucketHolds(dir_ / "local", "s3://feedline/replaced/");

  // Shard files without a pack.txt are not taken over.
  server_->Put("foreign/shard-000000.tar", dir_ / "local/shard-000000.tar");
  options.restart = false;
  EXPECT_THAT([&] { PackSource(Images(), "s3://feedline/foreign/", options); },
              ThrowsMessage<Error>(HasSubstr(
                  "s3://feedline/foreign/ holds shard files but no pack.txt; pass --restart")));
}

}  // namespace
}  // namespace feedline::storage
