// OpenPackStore, which picks where a pack's files are read from (the local
// file system or a server), and a local store read through the PackStore
// interface.
#include "src/storage/pack_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/storage/http_pack_store.h"
#include "src/storage/local_pack_store.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;

class PackStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("feedline_pack_store_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(PackStoreTest, PathsAreReadFromTheFileSystem) {
  const std::string tar0 = Write("shard-000000.tar", "0123456789");
  const std::string tar1 = Write("shard-000001.tar", "abcdefghij");
  const auto store = OpenPackStore({tar0, tar1}, 0, RemoteOptions{});
  ASSERT_NE(dynamic_cast<const LocalPackStore*>(store.get()), nullptr);
  uint8_t bytes[4];
  store->tar(1).ReadRange(3, 4, bytes);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(bytes), 4), "defg");
  store->tar(0).ReadRange(0, 2, bytes);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(bytes), 2), "01");
  EXPECT_NO_THROW(store->CheckTar(0, 10));
  EXPECT_THROW(store->CheckTar(0, 11), Error);
  EXPECT_GE(store->max_open(), 1u);
}

TEST_F(PackStoreTest, ReadsTextAndSaysWhenAFileIsMissing) {
  const std::string tar = Write("shard-000000.tar", "x");
  const std::string classes = Write("classes.txt", "cat\ndog\n");
  const auto store = OpenPackStore({tar}, 0, RemoteOptions{});
  EXPECT_EQ(store->ReadText(classes), "cat\ndog\n");
  EXPECT_EQ(store->ReadText((dir_ / "manifest.json").string()), std::nullopt);
}

// Through the cache (cache_dir set) is tested with a server, in
// shard_cache_test.cc; opening a store without one connects to nothing.
TEST_F(PackStoreTest, UrlsWithoutACacheAreReadFromTheServer) {
  const std::vector<std::string> urls = {"http://127.0.0.1:9/pack/shard-000000.tar",
                                         "http://127.0.0.1:9/pack/shard-000001.tar"};
  const auto direct = OpenPackStore(urls, 0, RemoteOptions{});
  EXPECT_NE(dynamic_cast<const HttpPackStore*>(direct.get()), nullptr);
}

TEST_F(PackStoreTest, RefusesAPackPartlyLocalPartlyRemote) {
  const std::string tar = Write("shard-000000.tar", "x");
  try {
    OpenPackStore({tar, "https://host/pack/shard-000001.tar"}, 0, RemoteOptions{});
    FAIL() << "a mixed pack was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("partly local files and partly URLs (" + tar));
  }
}

}  // namespace
}  // namespace feedline::storage
