// Uploads to a real SeaweedFS S3 endpoint on loopback: a small file in one
// PUT and a file over the part size in a multipart upload both read back
// byte for byte; wrong credentials and an unknown upload fail at once,
// naming the URL and the S3 error; uploads left under way are aborted.
#include "src/storage/s3_upload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/storage/http_client.h"
#include "tests/storage/s3_test_environment.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::S3TestEnvironment;
using testing::SeaweedFsServer;
using testing::TempDir;

std::vector<uint8_t> RandomUploadBytes(size_t size, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(random());
  return bytes;
}

class S3UploadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new SeaweedFsServer();
    server_->Start();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  // The object's bytes as the store serves them.
  std::vector<uint8_t> Download(const std::string& url) {
    std::optional<std::vector<uint8_t>> body = client_.ReadAll(url, uint64_t{64} << 20);
    EXPECT_TRUE(body.has_value()) << url;
    return body.value_or(std::vector<uint8_t>{});
  }

  static SeaweedFsServer* server_;
  S3TestEnvironment env_{*server_};
  TempDir dir_;
  HttpClient client_{testing::QuickRetries()};
};

SeaweedFsServer* S3UploadTest::server_ = nullptr;

TEST_F(S3UploadTest, ASmallFileIsOnePutAndReadsBackByteForByte) {
  const std::vector<uint8_t> bytes = RandomUploadBytes(300 << 10, 1);
  testing::WriteBytes(dir_ / "small", bytes);
  UploadFileToS3(client_, dir_ / "small", "s3://feedline/up/small.bin");
  EXPECT_EQ(Download("s3://feedline/up/small.bin"), bytes);
  // Replaced by a later upload.
  const std::vector<uint8_t> other = RandomUploadBytes(1000, 2);
  testing::WriteBytes(dir_ / "small", other);
  UploadFileToS3(client_, dir_ / "small", "s3://feedline/up/small.bin");
  EXPECT_EQ(Download("s3://feedline/up/small.bin"), other);
  testing::WriteBytes(dir_ / "empty", {});
  UploadFileToS3(client_, dir_ / "empty", "s3://feedline/up/empty.bin");
  EXPECT_EQ(client_.Size("s3://feedline/up/empty.bin"), uint64_t{0});
}

TEST_F(S3UploadTest, AFileOverThePartSizeGoesUpInPartsByteForByte) {
  // Three parts: two of 5 MiB and a short last one.
  const std::vector<uint8_t> bytes = RandomUploadBytes((size_t{11} << 20) + 12345, 3);
  testing::WriteBytes(dir_ / "large", bytes);
  UploadFileToS3(client_, dir_ / "large", "s3://feedline/up/large.bin", kS3MinPartBytes);
  EXPECT_EQ(client_.Size("s3://feedline/up/large.bin"), bytes.size());
  EXPECT_EQ(Download("s3://feedline/up/large.bin"), bytes);
  // Exactly two parts' worth: no empty third part.
  const std::vector<uint8_t> even = RandomUploadBytes(size_t{10} << 20, 4);
  testing::WriteBytes(dir_ / "even", even);
  UploadFileToS3(client_, dir_ / "even", "s3://feedline/up/even.bin", kS3MinPartBytes);
  EXPECT_EQ(Download("s3://feedline/up/even.bin"), even);
}

TEST_F(S3UploadTest, WrongCredentialsFailAtOnceNamingTheUrl) {
  testing::WriteBytes(dir_ / "file", RandomUploadBytes(1000, 5));
  env_.Set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  RemoteOptions patient = testing::QuickRetries();
  patient.max_attempts = 10;
  const HttpClient client(patient);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT([&] { UploadFileToS3(client, dir_ / "file", "s3://feedline/up/denied.bin"); },
              ThrowsMessage<Error>(AllOf(HasSubstr("PUT s3://feedline/up/denied.bin: HTTP 403 "
                                                   "SignatureDoesNotMatch (access refused"),
                                         HasSubstr("(1 attempt in "))));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The multipart path too: its first request is refused the same way.
  testing::WriteBytes(dir_ / "large", RandomUploadBytes(size_t{6} << 20, 6));
  EXPECT_THAT([&] {
    UploadFileToS3(client, dir_ / "large", "s3://feedline/up/denied.bin", kS3MinPartBytes);
  },
              ThrowsMessage<Error>(HasSubstr("POST s3://feedline/up/denied.bin?uploads=: HTTP 403")));
}

TEST_F(S3UploadTest, AnUnknownUploadOrAMissingFileOrATooSmallPartIsAnErrorNamingIt) {
  testing::WriteBytes(dir_ / "file", RandomUploadBytes(1000, 7));
  // A part of an upload the store does not know (aborted, or expired).
  const std::vector<uint8_t> part = RandomUploadBytes(1000, 8);
  EXPECT_THAT([&] {
    client_.Send("PUT", "s3://feedline/up/k?partNumber=1&uploadId=no-such-upload", part);
  },
              ThrowsMessage<Error>(HasSubstr("PUT s3://feedline/up/k?partNumber=1&uploadId=no-such-"
                                             "upload: HTTP 404 NoSuchUpload (not found)")));
  EXPECT_THAT([&] { UploadFileToS3(client_, dir_ / "absent", "s3://feedline/up/absent"); },
              ThrowsMessage<Error>(HasSubstr(dir_ / "absent" + ": cannot read the file to upload")));
  EXPECT_THAT([&] { UploadFileToS3(client_, dir_ / "file", "s3://feedline/up/f", 1 << 20); },
              ThrowsMessage<Error>(HasSubstr("part size must be at least 5242880 bytes")));
}

TEST_F(S3UploadTest, DeleteRemovesAnObjectAndIgnoresAMissingOne) {
  UploadTextToS3(client_, "hello\n", "s3://feedline/up/text.txt");
  EXPECT_EQ(Download("s3://feedline/up/text.txt"), (std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o', '\n'}));
  DeleteFromS3(client_, "s3://feedline/up/text.txt");
  EXPECT_EQ(client_.Size("s3://feedline/up/text.txt"), std::nullopt);
  DeleteFromS3(client_, "s3://feedline/up/text.txt");
}

TEST_F(S3UploadTest, AbortS3UploadsDropsTheUploadsLeftInAFolderOnly) {
  // Two uploads left under way, as a killed process leaves them: one with
  // a part sent, and one in a folder below.
  const std::string created = client_.Send("POST", "s3://feedline/left/a.tar?uploads=").body;
  const std::string id = created.substr(created.find("<UploadId>") + 10,
                                        created.find("</UploadId>") - created.find("<UploadId>") - 10);
  ASSERT_FALSE(id.empty()) << created;
  const std::vector<uint8_t> part = RandomUploadBytes(size_t{5} << 20, 9);
  client_.Send("PUT", "s3://feedline/left/a.tar?partNumber=1&uploadId=" + id, part);
  client_.Send("POST", "s3://feedline/left/sub/b.tar?uploads=");
  EXPECT_EQ(AbortS3Uploads(client_, "s3://feedline/left/"), 1);
  EXPECT_EQ(AbortS3Uploads(client_, "s3://feedline/left/"), 0);
  EXPECT_THAT([&] { client_.Send("PUT", "s3://feedline/left/a.tar?partNumber=2&uploadId=" + id, part); },
              ThrowsMessage<Error>(HasSubstr("HTTP 404 NoSuchUpload")));
  EXPECT_EQ(AbortS3Uploads(client_, "s3://feedline/left/sub/"), 1);
  EXPECT_THAT([&] { AbortS3Uploads(client_, "http://feedline/left/"); },
              ThrowsMessage<Error>(HasSubstr("not an S3 prefix")));
}

}  // namespace
}  // namespace feedline::storage
