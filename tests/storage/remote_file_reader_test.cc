#include "feedline/storage/remote_file_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::NginxServer;
using testing::SeaweedFsServer;
using testing::TempDir;
using testing::WriteBytes;

TEST(RemoteFileReaderTest, ReadsTheSizeAndRangesOfAServedFile) {
  TempDir root;
  std::vector<uint8_t> bytes(5000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 13 + i / 7);
  WriteBytes(root.path() / "part-0.parquet", bytes);
  NginxServer server(root.path().string());
  server.Start();
  RemoteOptions options;
  options.max_attempts = 1;
  RemoteFileReader reader(options);
  const std::string url = server.Url("part-0.parquet");
  EXPECT_EQ(reader.Size(url), 5000u);
  std::vector<uint8_t> got(100);
  reader.ReadRange(url, 4900, got.size(), got.data());
  EXPECT_EQ(got, std::vector<uint8_t>(bytes.begin() + 4900, bytes.end()));
  reader.ReadRange(url, 0, 0, nullptr);  // nothing asked, nothing requested
  EXPECT_EQ(reader.connections(), 1u);
  try {
    reader.Size(server.Url("absent.parquet"));
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("absent.parquet"));
  }
}

// Points the AWS configuration at `server` for a test, restoring the
// variables after.
class AwsEndpoint {
 public:
  explicit AwsEndpoint(const SeaweedFsServer& server) {
    Set("AWS_ACCESS_KEY_ID", SeaweedFsServer::kAccessKey);
    Set("AWS_SECRET_ACCESS_KEY", SeaweedFsServer::kSecretKey);
    Set("AWS_ENDPOINT_URL", server.Endpoint());
    Set("AWS_REGION", "us-east-1");
  }
  ~AwsEndpoint() {
    for (const auto& [name, value] : saved_) {
      if (value.empty()) {
        ::unsetenv(name.c_str());
      } else {
        ::setenv(name.c_str(), value.c_str(), 1);
      }
    }
  }
  AwsEndpoint(const AwsEndpoint&) = delete;
  AwsEndpoint& operator=(const AwsEndpoint&) = delete;

 private:
  void Set(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_[name] = old != nullptr ? old : "";
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  std::map<std::string, std::string> saved_;
};

TEST(RemoteFileReaderTest, ReadsAnS3ObjectByRanges) {
  TempDir root;
  std::vector<uint8_t> bytes(3000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 5 + i / 11);
  WriteBytes(root.path() / "part-0.parquet", bytes);
  SeaweedFsServer server;
  server.Start();
  server.Put("corpus/part-0.parquet", root.path() / "part-0.parquet");
  AwsEndpoint endpoint(server);
  RemoteFileReader reader;
  const std::string url = std::string("s3://") + SeaweedFsServer::kBucket + "/corpus/part-0.parquet";
  EXPECT_EQ(reader.Size(url), 3000u);
  std::vector<uint8_t> got(1000);
  reader.ReadRange(url, 1234, got.size(), got.data());
  EXPECT_EQ(got, std::vector<uint8_t>(bytes.begin() + 1234, bytes.begin() + 2234));
}

TEST(RemoteFileReaderTest, KnowsTheUrlsItReads) {
  EXPECT_TRUE(RemoteFileReader::IsUrl("https://host/a.parquet"));
  EXPECT_TRUE(RemoteFileReader::IsUrl("http://host/a.parquet"));
  EXPECT_TRUE(RemoteFileReader::IsUrl("s3://bucket/a.parquet"));
  EXPECT_FALSE(RemoteFileReader::IsUrl("/data/a.parquet"));
  EXPECT_FALSE(RemoteFileReader::IsUrl("file:///data/a.parquet"));
}

}  // namespace
}  // namespace feedline::storage
