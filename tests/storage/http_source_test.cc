// HttpSource against real servers: files that nginx serves over HTTP, and
// objects that SeaweedFS serves over S3 (s3:// URLs, signed).
#include "src/storage/http_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/storage/http_client.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/s3_test_environment.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/byte_source_testing.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::NginxServer;
using testing::QuickRetries;
using testing::S3TestEnvironment;
using testing::SeaweedFsServer;
using testing::PatternBytes;
using testing::TempDir;
using testing::WriteBytes;

// Size, a range, a stream and the whole file, each the file's bytes; a
// missing file is nullopt with the status that said so.
void ExpectHttpSourceReadsLikeTheFile(const HttpSource& source, const std::vector<uint8_t>& bytes) {
  EXPECT_EQ(source.Size(), bytes.size());
  std::vector<uint8_t> range(300);
  source.ReadRange(1000, range.size(), range.data());
  EXPECT_EQ(range, std::vector<uint8_t>(bytes.begin() + 1000, bytes.begin() + 1300));
  std::vector<uint8_t> streamed;
  source.Stream(10, bytes.size() - 10, [&](const uint8_t* data, size_t n) {
    streamed.insert(streamed.end(), data, data + n);
  });
  EXPECT_EQ(streamed, std::vector<uint8_t>(bytes.begin() + 10, bytes.end()));
  EXPECT_EQ(source.ReadAll(bytes.size()), bytes);
}

TEST(HttpSourceTest, ReadsAFileThatNginxServes) {
  TempDir root;
  const std::vector<uint8_t> bytes = PatternBytes(100000);
  WriteBytes(root / "data.bin", bytes);
  NginxServer server(root.path().string());
  server.Start();
  const HttpClient client(QuickRetries());
  const HttpSource source(&client, server.Url("data.bin"));
  EXPECT_EQ(source.name(), server.Url("data.bin"));
  ExpectHttpSourceReadsLikeTheFile(source, bytes);
  // A whole file is one GET, no HEAD before it.
  const size_t gets = server.Requests("/data.bin");
  source.ReadAll(bytes.size());
  EXPECT_EQ(server.Requests("/data.bin", gets + 1), gets + 1);

  const HttpSource absent(&client, server.Url("absent.bin"));
  std::string missing;
  EXPECT_EQ(absent.Size(&missing), std::nullopt);
  EXPECT_EQ(missing, "HTTP 404 (not found)");
  missing.clear();
  EXPECT_EQ(absent.ReadAll(10, &missing), std::nullopt);
  EXPECT_EQ(missing, "HTTP 404 (not found)");
  std::vector<uint8_t> range(10);
  EXPECT_THAT([&] { absent.ReadRange(0, range.size(), range.data()); },
              ::testing::ThrowsMessage<Error>(HasSubstr(server.Url("absent.bin"))));
  // Not a local file: a plain Error, not an OsError.
  try {
    absent.ThrowMissing("x", "the message");
  } catch (const OsError&) {
    ADD_FAILURE() << "an OsError for a URL";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the message");
  }
}

TEST(HttpSourceTest, ReadsAnObjectThatAnS3EndpointServes) {
  TempDir root;
  const std::vector<uint8_t> bytes = PatternBytes(50000);
  WriteBytes(root / "data.bin", bytes);
  SeaweedFsServer server;
  server.Start();
  server.Put("objects/data.bin", root / "data.bin");
  const S3TestEnvironment environment(server);
  const HttpClient client(QuickRetries());
  const std::string bucket = std::string("s3://") + SeaweedFsServer::kBucket;
  ExpectHttpSourceReadsLikeTheFile(HttpSource(&client, bucket + "/objects/data.bin"), bytes);
  std::string missing;
  EXPECT_EQ(HttpSource(&client, bucket + "/objects/absent.bin").Size(&missing), std::nullopt);
  EXPECT_THAT(missing, HasSubstr("HTTP 404"));
}

}  // namespace
}  // namespace feedline::storage
