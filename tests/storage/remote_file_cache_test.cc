// RemoteFileCache against a real nginx: whole served files in the node's
// cache folder, downloaded once per node, fetched ahead in the plan's order
// within the byte bound, kept within cache_limit, and a stale copy (its
// length not the server's) downloaded again.
#include "feedline/storage/remote_file_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using testing::NginxServer;
using testing::QuickRetries;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;

std::vector<uint8_t> FileBytes(size_t size, int seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 31 + seed * 7 + i / 253);
  return bytes;
}

class RemoteFileCacheTest : public ::testing::Test {
 protected:
  static constexpr size_t kFiles = 3;
  static constexpr size_t kFileBytes = 100 << 10;

  void SetUp() override {
    server_.Start();  // its port, for the URLs
    for (size_t f = 0; f < kFiles; ++f) {
      const std::string name = "part-" + std::to_string(f) + ".parquet";
      bytes_.push_back(FileBytes(kFileBytes, static_cast<int>(f)));
      WriteBytes(served_ / name, bytes_.back());
      urls_.push_back(server_.Url(name));
    }
  }

  RemoteOptions Options(uint64_t cache_limit = 0, uint64_t prefetch_bytes = 0) const {
    RemoteOptions options = QuickRetries();
    options.cache_dir = cache_ / "node";
    options.cache_limit = cache_limit;
    options.prefetch_bytes = prefetch_bytes;
    options.download_part_bytes = 64 << 10;
    return options;
  }

  std::vector<uint64_t> Sizes() const { return std::vector<uint64_t>(kFiles, kFileBytes); }

  // Waits up to 10 s for `path` to exist.
  static bool AppearsSoon(const std::string& path) {
    for (int i = 0; i < 1000; ++i) {
      if (std::filesystem::exists(path)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // The access log's lines that GET `name`, in order.
  std::vector<size_t> GetLinesOf(const std::string& name) const {
    std::vector<size_t> at;
    const std::vector<std::string> log = server_.AccessLog();
    for (size_t i = 0; i < log.size(); ++i) {
      if (log[i].find(" GET /" + name + " ") != std::string::npos) at.push_back(i);
    }
    return at;
  }

  TempDir served_;
  TempDir cache_;
  NginxServer server_{served_.path().string()};
  std::vector<std::vector<uint8_t>> bytes_;
  std::vector<std::string> urls_;
};

TEST_F(RemoteFileCacheTest, EachFileIsDownloadedOncePerNodeWholeAndEqualToTheServers) {
  RemoteFileCache first(urls_, Sizes(), Options());
  RemoteFileCache second(urls_, Sizes(), Options());  // another process's, on the node
  for (size_t f = 0; f < kFiles; ++f) {
    EXPECT_FALSE(first.Present(f));
    const std::string& path = first.Ensure(f);
    EXPECT_TRUE(first.Present(f));
    EXPECT_EQ(path, first.Path(f));
    EXPECT_EQ(ReadBytes(path), bytes_[f]) << f;
    EXPECT_EQ(second.Ensure(f), path);
  }
  EXPECT_EQ(first.downloads(), 3);
  EXPECT_EQ(second.downloads(), 0);
  // Two 64 KiB parts a file, each requested once.
  for (size_t f = 0; f < kFiles; ++f) {
    EXPECT_EQ(GetLinesOf("part-" + std::to_string(f) + ".parquet").size(), 2u) << f;
  }
}

TEST_F(RemoteFileCacheTest, ThePlanIsFetchedAheadInItsOrderWithinTheByteBound) {
  // Room for one file ahead: the next starts once the delivered samples
  // pass the last use of the one before.
  RemoteFileCache cache(urls_, Sizes(), Options(0, kFileBytes + kFileBytes / 2));
  cache.Plan({PlannedFile{2, 9}, PlannedFile{0, 19}, PlannedFile{1, 29}});
  ASSERT_TRUE(AppearsSoon(cache.Path(2)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(std::filesystem::exists(cache.Path(0)));
  cache.Progress(10);
  ASSERT_TRUE(AppearsSoon(cache.Path(0)));
  cache.Progress(20);
  ASSERT_TRUE(AppearsSoon(cache.Path(1)));
  EXPECT_EQ(cache.prefetches(), 3);
  EXPECT_LE(cache.peak_bytes_ahead(), kFileBytes + kFileBytes / 2);
  for (size_t f = 0; f < kFiles; ++f) EXPECT_EQ(ReadBytes(cache.Ensure(f)), bytes_[f]);
  EXPECT_EQ(cache.downloads(), 3);  // the reads found them in place
  const std::vector<size_t> two = GetLinesOf("part-2.parquet");
  const std::vector<size_t> zero = GetLinesOf("part-0.parquet");
  const std::vector<size_t> one = GetLinesOf("part-1.parquet");
  ASSERT_FALSE(two.empty() || zero.empty() || one.empty());
  EXPECT_LT(two.back(), zero.front());
  EXPECT_LT(zero.back(), one.front());
}

TEST_F(RemoteFileCacheTest, TheCacheHoldsNoMoreThanItsLimit) {
  RemoteFileCache cache(urls_, Sizes(), Options(2 * kFileBytes + 10));
  for (size_t f = 0; f < kFiles; ++f) EXPECT_EQ(ReadBytes(cache.Ensure(f)), bytes_[f]);
  uint64_t kept = 0;
  for (size_t f = 0; f < kFiles; ++f) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(cache.Path(f), ec);
    if (!ec) kept += size;
  }
  EXPECT_EQ(kept, 2 * kFileBytes);
  EXPECT_FALSE(std::filesystem::exists(cache.Path(0)));  // the least recently used
}

TEST_F(RemoteFileCacheTest, DownloadsEndingAtOnceNeverPutMoreThanTheLimitInPlace) {
  // Room for one file: each round, three threads each make a different file
  // present at once, two of them downloaded again. A watcher sums the whole
  // files in the folder all the while (a download under way, .part, aside).
  const uint64_t limit = kFileBytes + 10;
  RemoteFileCache cache(urls_, Sizes(), Options(limit));
  const std::filesystem::path folder = std::filesystem::path(cache.Path(0)).parent_path();
  std::atomic<bool> done{false};
  uint64_t peak = 0;
  std::thread watcher([&] {
    while (!done.load()) {
      uint64_t whole = 0;
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
        if (entry.path().extension() != ".parquet") continue;
        std::error_code gone;
        const uint64_t size = entry.file_size(gone);
        if (!gone) whole += size;
      }
      peak = std::max(peak, whole);
    }
  });
  for (int round = 0; round < 20; ++round) {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < kFiles; ++t) {
      threads.emplace_back([&, t] { cache.Ensure((t + static_cast<size_t>(round)) % kFiles); });
    }
    for (std::thread& thread : threads) thread.join();
  }
  done = true;
  watcher.join();
  EXPECT_GT(cache.downloads(), static_cast<int64_t>(kFiles));
  EXPECT_GT(peak, 0u);
  EXPECT_LE(peak, limit);
}

TEST_F(RemoteFileCacheTest, ACopyWhoseLengthIsNotTheServersIsDownloadedAgain) {
  RemoteFileCache cache(urls_, Sizes(), Options());
  std::filesystem::create_directories(std::filesystem::path(cache.Path(1)).parent_path());
  WriteBytes(cache.Path(1), FileBytes(1000, 9));  // left by another version of the file
  EXPECT_FALSE(cache.Present(1));
  EXPECT_EQ(ReadBytes(cache.Ensure(1)), bytes_[1]);
  EXPECT_TRUE(cache.Present(1));
  EXPECT_EQ(cache.downloads(), 1);
}

TEST_F(RemoteFileCacheTest, AFileChangedOnTheServerIsAnErrorNamingIt) {
  std::vector<uint64_t> sizes = Sizes();
  sizes[0] = kFileBytes + 1;  // what the dataset was made with
  RemoteFileCache cache(urls_, sizes, Options());
  try {
    cache.Ensure(0);
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(urls_[0]));
    EXPECT_THAT(e.what(), HasSubstr("changed"));
  }
}

TEST_F(RemoteFileCacheTest, AMissingFileIsAnErrorNamingItsUrl) {
  const std::string absent = server_.Url("absent.parquet");
  RemoteFileCache cache({absent}, {10}, Options());
  try {
    cache.Ensure(0);
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(absent));
    EXPECT_THAT(e.what(), HasSubstr("404"));
  }
}

TEST_F(RemoteFileCacheTest, ItNeedsACacheFolderAndOneSizePerFile) {
  RemoteOptions options = Options();
  options.cache_dir.clear();
  EXPECT_THROW(RemoteFileCache(urls_, Sizes(), options), Error);
  EXPECT_THROW(RemoteFileCache(urls_, {1, 2}, Options()), Error);
  RemoteFileCache cache(urls_, Sizes(), Options());
  EXPECT_THROW(cache.Path(kFiles), Error);
}

}  // namespace
}  // namespace feedline::storage
