// ListS3Folder against a real S3 endpoint (SeaweedFS): the objects directly
// in a folder, page after page, with their sizes; a missing bucket is an
// error naming the folder.
#include "src/storage/s3_listing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/remote_file_reader.h"
#include "tests/storage/s3_test_environment.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::S3TestEnvironment;
using testing::SeaweedFsServer;
using testing::TempDir;
using testing::WriteBytes;

class S3ListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Start();
    // Five files in corpus/, one below it, one beside it.
    const std::vector<std::pair<std::string, size_t>> objects{
        {"corpus/part-0.parquet", 100}, {"corpus/part-1.parquet", 200},
        {"corpus/part-2.parquet", 300}, {"corpus/part-10.parquet", 400},
        {"corpus/notes.txt", 5},        {"corpus/old/part-0.parquet", 600},
        {"corpusx/part-0.parquet", 700}};
    for (const auto& [key, size] : objects) {
      const std::string file = scratch_ / "object";
      WriteBytes(file, std::vector<uint8_t>(size, 7));
      server_.Put(key, file);
    }
  }

  std::string Url(const std::string& key) const {
    return std::string("s3://") + SeaweedFsServer::kBucket + "/" + key;
  }

  TempDir scratch_;
  SeaweedFsServer server_;
};

TEST_F(S3ListingTest, ListsTheObjectsDirectlyInTheFolderPageAfterPage) {
  S3TestEnvironment environment(server_);
  HttpClient client(testing::QuickRetries());
  // Two keys a page: three requests, continued by their tokens.
  const std::vector<S3Object> listed = ListS3Folder(client, Url("corpus"), 2);
  std::vector<std::pair<std::string, uint64_t>> got;
  for (const S3Object& object : listed) got.emplace_back(object.url, object.size);
  EXPECT_THAT(got, ElementsAre(std::make_pair(Url("corpus/notes.txt"), 5u),
                               std::make_pair(Url("corpus/part-0.parquet"), 100u),
                               std::make_pair(Url("corpus/part-1.parquet"), 200u),
                               std::make_pair(Url("corpus/part-10.parquet"), 400u),
                               std::make_pair(Url("corpus/part-2.parquet"), 300u)));
  EXPECT_EQ(ListS3Folder(client, Url("corpus/"), 1000).size(), 5u);
  EXPECT_TRUE(ListS3Folder(client, Url("nothing/")).empty());
}

TEST_F(S3ListingTest, ARemoteFileReaderGlobsTheFolderItNames) {
  S3TestEnvironment environment(server_);
  RemoteFileReader reader(testing::QuickRetries());
  EXPECT_THAT(reader.Glob(Url("corpus/*.parquet")),
              ElementsAre(Url("corpus/part-0.parquet"), Url("corpus/part-1.parquet"),
                          Url("corpus/part-10.parquet"), Url("corpus/part-2.parquet")));
  EXPECT_THAT(reader.Glob(Url("corpus/part-?.parquet")),
              ElementsAre(Url("corpus/part-0.parquet"), Url("corpus/part-1.parquet"),
                          Url("corpus/part-2.parquet")));
  EXPECT_TRUE(reader.Glob(Url("corpus/*.arrow")).empty());
  try {
    reader.Glob(Url("c*/part-0.parquet"));
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("glob characters in the file name only"));
  }
  try {
    reader.Glob("https://host/corpus/*.parquet");
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("https://host/corpus/*.parquet"));
  }
}

TEST_F(S3ListingTest, AMissingBucketOrABadKeyIsAnErrorNamingTheFolder) {
  S3TestEnvironment environment(server_);
  HttpClient client(testing::QuickRetries());
  try {
    ListS3Folder(client, "s3://no-such-bucket/corpus/");
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no-such-bucket"));
  }
  environment.Set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
  HttpClient refused(testing::QuickRetries());
  try {
    ListS3Folder(refused, Url("corpus/"));
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("403"));
    EXPECT_THAT(e.what(), HasSubstr(SeaweedFsServer::kBucket));
  }
  EXPECT_THROW(ListS3Folder(client, "https://host/corpus/"), Error);
}

}  // namespace
}  // namespace feedline::storage
