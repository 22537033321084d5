// S3Config (the AWS configuration from the environment and ~/.aws), and
// packs read from s3:// URLs of a real SeaweedFS S3 endpoint that the test
// starts on loopback, through ShardDataset: the local pack's batches, with
// and without the node's cache, and clear errors for wrong credentials and
// missing keys.
#include "src/storage/s3_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using testing::BatchesOf;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::SeaweedFsServer;
using testing::TempDir;

constexpr const char* kAwsVariables[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",   "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",    "AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "HOME"};

// Clears the AWS variables (and HOME) for a test and restores them after.
class ScopedAwsEnvironment {
 public:
  ScopedAwsEnvironment() {
    for (const char* name : kAwsVariables) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      ::unsetenv(name);
    }
  }
  ~ScopedAwsEnvironment() {
    for (const char* name : kAwsVariables) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void Set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

 private:
  std::map<std::string, std::string> saved_;
};

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(S3Config, EnvironmentVariablesComeFirst) {
  ScopedAwsEnvironment env;
  TempDir home;
  env.Set("HOME", home.path().string());
  WriteText(home / ".aws/credentials", "[default]\naws_access_key_id = FILEKEY\n"
                                       "aws_secret_access_key = FILESECRET\n");
  WriteText(home / ".aws/config", "[default]\nregion = eu-west-1\n"
                                  "endpoint_url = http://file.example:9000\n");
  env.Set("AWS_ACCESS_KEY_ID", "ENVKEY");
  env.Set("AWS_SECRET_ACCESS_KEY", "ENVSECRET");
  env.Set("AWS_SESSION_TOKEN", "ENVTOKEN");
  env.Set("AWS_REGION", "ap-south-1");
  env.Set("AWS_ENDPOINT_URL", "http://127.0.0.1:8333/");
  const S3Config config = LoadS3Config();
  EXPECT_EQ(config.access_key, "ENVKEY");
  EXPECT_EQ(config.secret_key, "ENVSECRET");
  EXPECT_EQ(config.session_token, "ENVTOKEN");
  EXPECT_EQ(config.region, "ap-south-1");
  EXPECT_EQ(config.endpoint, "http://127.0.0.1:8333");
  // Path-style on a custom endpoint.
  EXPECT_EQ(S3HttpUrl(config, "s3://bucket/train/shard-000000.tar"),
            "http://127.0.0.1:8333/bucket/train/shard-000000.tar");
  env.Set("AWS_ENDPOINT_URL_S3", "http://s3only:1");
  EXPECT_EQ(LoadS3Config().endpoint, "http://s3only:1");
}

TEST(S3Config, QueriesAreEncodedAsSigV4SignsThemAndAnswersRead) {
  EXPECT_EQ(QueryEncode("corpus/part 1&x=~A-z_0.9"), "corpus%2Fpart%201%26x%3D~A-z_0.9");
  const std::string body =
      "<R><Contents><Key>a</Key><Size>1</Size></Contents><Contents><Key>b</Key></Contents></R>";
  EXPECT_EQ(XmlElement(body, "Key"), "a");
  const size_t second = body.find("<Contents>", body.find("</Contents>"));
  EXPECT_EQ(XmlElement(body, "Key", second), "b");
  EXPECT_EQ(XmlElement(body, "Size", second), "");
  EXPECT_EQ(XmlElement("<Key>unclosed", "Key"), "");
}

TEST(S3Config, AProfileReadsTheCredentialsAndConfigFiles) {
  ScopedAwsEnvironment env;
  TempDir home;
  env.Set("HOME", home.path().string());
  WriteText(home / ".aws/credentials",
            "# comment\n[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n"
            "[train]\naws_access_key_id=TRAINKEY\naws_secret_access_key = TRAINSECRET\n"
            "aws_session_token = TOKEN\n");
  WriteText(home / ".aws/config", "[default]\nregion = us-west-2\n[profile train]\n"
                                  "region = eu-central-1\nendpoint_url = http://10.1.2.3:8333\n");
  S3Config config = LoadS3Config();
  EXPECT_EQ(config.access_key, "D");
  EXPECT_EQ(config.region, "us-west-2");
  EXPECT_EQ(config.endpoint, "");
  // AWS itself: virtual-hosted addressing.
  EXPECT_EQ(S3HttpUrl(config, "s3://bucket/k"), "https://bucket.s3.us-west-2.amazonaws.com/k");
  env.Set("AWS_PROFILE", "train");
  config = LoadS3Config();
  EXPECT_EQ(config.access_key, "TRAINKEY");
  EXPECT_EQ(config.secret_key, "TRAINSECRET");
  EXPECT_EQ(config.session_token, "TOKEN");
  EXPECT_EQ(config.region, "eu-central-1");
  EXPECT_EQ(config.endpoint, "http://10.1.2.3:8333");
  // Files named by the environment.
  WriteText(home / "other/creds", "[train]\naws_access_key_id = OTHER\naws_secret_access_key = O\n");
  env.Set("AWS_SHARED_CREDENTIALS_FILE", home / "other/creds");
  EXPECT_EQ(LoadS3Config().access_key, "OTHER");
  EXPECT_THAT([&] { S3HttpUrl(config, "s3:///key"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("s3:///key: no bucket")));
}

// One SeaweedFS for the suite (it takes a second or two to start), holding
// the pack under s3://feedline/train/.
class S3PackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TempDir();
    vision::WriteSyntheticImageFolder(*folder_ / "images", 20, /*classes=*/4, /*seed=*/5,
                                      /*broken=*/0);
    PackOptions options;
    options.shard_bytes = 200 << 10;
    PackSource(*folder_ / "images", *folder_ / "pack", options);
    server_ = new SeaweedFsServer();
    server_->Start();
    server_->PutFolder(*folder_ / "pack", "train");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete folder_;
    folder_ = nullptr;
  }
  void SetUp() override {
    env_.Set("AWS_ACCESS_KEY_ID", SeaweedFsServer::kAccessKey);
    env_.Set("AWS_SECRET_ACCESS_KEY", SeaweedFsServer::kSecretKey);
    env_.Set("AWS_ENDPOINT_URL", server_->Endpoint());
    env_.Set("AWS_REGION", "us-east-1");
    env_.Set("HOME", home_.path().string());
  }

  static RemoteOptions Quick() {
    RemoteOptions options;
    options.max_attempts = 3;
    options.backoff_s = 0.01;
    return options;
  }
  static std::shared_ptr<ShardDataset> Open(const std::string& url, const RemoteOptions& options) {
    return std::make_shared<ShardDataset>(ShardDataset::Find(url, options),
                                          vision::TrainPipeline(40, DType::kU8),
                                          std::vector<std::string>{}, 0, options);
  }
  static std::string LocalPack() { return *folder_ / "pack"; }

  static TempDir* folder_;
  static SeaweedFsServer* server_;
  ScopedAwsEnvironment env_;
  TempDir home_;
};

TempDir* S3PackTest::folder_ = nullptr;
SeaweedFsServer* S3PackTest::server_ = nullptr;

TEST_F(S3PackTest, AnS3PackGivesTheLocalPacksBatchesWithAndWithoutTheCache) {
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                                    vision::TrainPipeline(40, DType::kU8));
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local, 0);
  const std::shared_ptr<ShardDataset> served = Open("s3://feedline/train/", Quick());
  EXPECT_EQ(served->size(), local->size());
  EXPECT_EQ(served->shards().front(), "s3://feedline/train/shard-000000.tar");
  EXPECT_EQ(served->classes(), local->classes());
  EXPECT_EQ(BatchesOf(served, 2), want);

  TempDir cache;
  RemoteOptions cached = Quick();
  cached.cache_dir = cache / "cache";
  EXPECT_EQ(BatchesOf(Open("s3://feedline/train", cached), 2), want);
  EXPECT_EQ(BatchesOf(Open("s3://feedline/train/", cached), 0), want);
}

TEST_F(S3PackTest, CredentialsFromAProfileInTheCredentialsFile) {
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  WriteText(home_ / ".aws/credentials",
            std::string("[train]\naws_access_key_id = ") + SeaweedFsServer::kAccessKey +
                "\naws_secret_access_key = " + SeaweedFsServer::kSecretKey + "\n");
  env_.Set("AWS_PROFILE", "train");
  EXPECT_EQ(Open("s3://feedline/train/", Quick())->size(), 20);
}

TEST_F(S3PackTest, WrongOrMissingCredentialsFailAtOnceSayingWhich) {
  env_.Set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  RemoteOptions patient = Quick();
  patient.max_attempts = 10;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT([&] { Open("s3://feedline/train/", patient); },
              ::testing::ThrowsMessage<Error>(::testing::AllOf(
                  HasSubstr("s3://feedline/train/pack.txt: HTTP 403 SignatureDoesNotMatch "
                            "(access refused: check the credentials"),
                  HasSubstr("(1 attempt in "))));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  env_.Set("AWS_ACCESS_KEY_ID", "nobody");
  EXPECT_THAT([&] { Open("s3://feedline/train/", patient); },
              ::testing::ThrowsMessage<Error>(HasSubstr("HTTP 403 InvalidAccessKeyId")));
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  EXPECT_THAT([&] { Open("s3://feedline/train/", patient); },
              ::testing::ThrowsMessage<Error>(HasSubstr(
                  "s3://feedline/train/pack.txt: no AWS credentials: set AWS_ACCESS_KEY_ID")));
}

TEST_F(S3PackTest, AMissingPrefixOrBucketIsNotFound) {
  EXPECT_THAT([&] { Open("s3://feedline/absent/", Quick()); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("s3://feedline/absent/pack.txt: HTTP 404 (not found)")));
  EXPECT_THAT([&] { Open("s3://no-such-bucket/train/", Quick()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("s3://no-such-bucket/train/pack.txt")));
}

}  // namespace
}  // namespace feedline::storage
