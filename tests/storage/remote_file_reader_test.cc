#include "feedline/storage/remote_file_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::NginxServer;
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

TEST(RemoteFileReaderTest, KnowsTheUrlsItReads) {
  EXPECT_TRUE(RemoteFileReader::IsUrl("https://host/a.parquet"));
  EXPECT_TRUE(RemoteFileReader::IsUrl("http://host/a.parquet"));
  EXPECT_TRUE(RemoteFileReader::IsUrl("s3://bucket/a.parquet"));
  EXPECT_FALSE(RemoteFileReader::IsUrl("/data/a.parquet"));
  EXPECT_FALSE(RemoteFileReader::IsUrl("file:///data/a.parquet"));
}

}  // namespace
}  // namespace feedline::storage
