// The node's shard cache (RemoteOptions::cache_dir) under a pack that a real
// nginx serves on loopback, through the API users call: each shard fetched
// once per node whatever the datasets, threads and processes reading it, the
// byte budget kept, and a download killed midway never taken as whole.
#include "src/storage/shard_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/storage/shard_index.h"
#include "feedline/stats.h"
#include "feedline/synth/synth.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/served_pack.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using testing::BatchesOf;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::NginxServer;
using testing::ReadBytes;
using testing::TempDir;
using testing::WriteBytes;


void Read(const Dataset& data, int64_t index) {
  SampleContext ctx(/*seed=*/7, /*epoch=*/0, index);
  Sample sample;
  data.Get(index, sample, ctx);
}

// The files under the cache folder by name (shard-NNNNNN.tar, .part, ...).
std::map<std::string, uint64_t> CacheFiles(const std::string& cache) {
  std::map<std::string, uint64_t> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(cache, ec), end; !ec && it != end; it.increment(ec)) {
    const uint64_t size = it->is_regular_file(ec) ? it->file_size(ec) : 0;
    if (!ec && it->is_regular_file(ec)) files[it->path().filename().string()] = size;
  }
  return files;
}

uint64_t CachedTarBytes(const std::string& cache) {
  uint64_t total = 0;
  for (const auto& [name, size] : CacheFiles(cache)) {
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tar") == 0) total += size;
  }
  return total;
}

class ShardCacheTest : public testing::ServedPackTest {
 protected:
  RemoteOptions Cached(uint64_t limit = 0) const {
    RemoteOptions options;
    options.max_attempts = 3;
    options.backoff_s = 0.01;
    options.cache_limit = limit;
    return WithCache(options);
  }
  std::shared_ptr<ShardDataset> Served(const RemoteOptions& options,
                                       size_t max_open_shards = 0) const {
    return ServedDataset(options, vision::TrainPipeline(40, DType::kU8), max_open_shards);
  }
  // GET requests of each tar, by shard file name.
  std::map<std::string, int> TarGets() const {
    std::map<std::string, int> gets;
    for (const std::string& line : server_.AccessLog()) {
      const size_t at = line.find(" GET /train/shard-");
      if (at == std::string::npos || line.find(".tar ") == std::string::npos) continue;
      const size_t name = line.find("shard-", at);
      ++gets[line.substr(name, line.find(' ', name) - name)];
    }
    return gets;
  }
};

TEST_F(ShardCacheTest, EachShardIsDownloadedOncePerNodeAndTheBatchesAreTheLocalOnes) {
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                                    vision::TrainPipeline(40, DType::kU8));
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local, 0);
  // Two datasets over one cache, as two ranks of a node; threads and
  // processes.
  const std::shared_ptr<ShardDataset> rank0 = Served(Cached());
  const std::shared_ptr<ShardDataset> rank1 = Served(Cached());
  EXPECT_EQ(BatchesOf(rank0, 3), want);
  if (testing::kWorkerProcesses) EXPECT_EQ(BatchesOf(rank1, 2, WorkerMode::kProcess), want);
  EXPECT_EQ(BatchesOf(rank1, 2), want);
  EXPECT_EQ(BatchesOf(rank0, 0), want);

  const std::map<std::string, int> gets = TarGets();
  ASSERT_EQ(gets.size(), local->shards().size());
  for (const auto& [shard, count] : gets) EXPECT_EQ(count, 1) << shard;
  // The cache holds each shard whole, the server's bytes, and nothing half
  // done.
  const std::map<std::string, uint64_t> files = CacheFiles(cache_ / "cache");
  for (const std::string& tar : local->shards()) {
    const std::string name = fs::path(tar).filename().string();
    ASSERT_EQ(files.count(name), 1u) << name;
    EXPECT_EQ(files.at(name), fs::file_size(tar));
    EXPECT_EQ(files.count(name + ".part"), 0u);
  }
  // A new dataset over the full cache fetches no tar.
  const size_t requests = server_.AccessLog().size();
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), want);
  EXPECT_EQ(TarGets(), gets);
  EXPECT_GT(server_.AccessLog().size(), requests);  // its indexes, pack.txt, ...
}

TEST_F(ShardCacheTest, TheCacheStaysUnderItsLimitEvictingTheLeastRecentlyUsed) {
  std::vector<uint64_t> sizes;
  for (const std::string& tar : ShardDataset::Find(LocalPack())) {
    sizes.push_back(fs::file_size(tar.substr(0, tar.size() - 4) + ".tar"));
  }
  ASSERT_GE(sizes.size(), 3u);
  const uint64_t limit = *std::max_element(sizes.begin(), sizes.end()) * 2;
  // One descriptor open at a time: an evicted shard's file is gone once the
  // reader lets it go (an open one stays readable, and takes its space,
  // until then).
  const std::shared_ptr<ShardDataset> bounded = Served(Cached(limit), /*max_open_shards=*/1);
  // Shard by shard, twice: every shard is downloaded anew on the second pass
  // (the two after it evicted it), and the cache never holds more than the
  // limit once a download is done.
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t i = 0; i < bounded->size(); ++i) {
      Read(*bounded, i);
      EXPECT_LE(CachedTarBytes(cache_ / "cache"), limit) << i;
    }
  }
  EXPECT_GT(CachedTarBytes(cache_ / "cache"), 0u);
  const std::map<std::string, int> gets = TarGets();
  EXPECT_EQ(gets.size(), sizes.size());
  for (const auto& [shard, count] : gets) EXPECT_EQ(count, 2) << shard;
}

// A process killed mid-download leaves a .part, never a shard in place; the
// next reader resumes it from where it stopped (a ranged GET from its
// length) and gets the local batches. A .part of wrong bytes is refused by
// the CRC check and downloaded again.
TEST_F(ShardCacheTest, AKilledDownloadIsResumedAndNeverTakenAsWhole) {
  server_.Stop();
  server_.set_server_config("limit_rate 20k;");
  server_.Start();
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      Read(*Served(Cached()), 0);
    } catch (...) {
    }
    _exit(0);
  }
  // Wait for the child's download to be under way, then kill it.
  std::string part;
  for (int i = 0; i < 1000 && part.empty(); ++i) {
    for (const auto& [name, size] : CacheFiles(cache_ / "cache")) {
      if (name == "shard-000000.tar.part" && size > 0) part = name;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_FALSE(part.empty()) << "the download did not start";
  std::map<std::string, uint64_t> files = CacheFiles(cache_ / "cache");
  EXPECT_EQ(files.count("shard-000000.tar"), 0u);
  const uint64_t left = files.at("shard-000000.tar.part");
  const uint64_t whole = fs::file_size(LocalPack() + "/shard-000000.tar");
  ASSERT_LT(left, whole);

  server_.Stop();
  const size_t before = server_.AccessLog().size();  // the child's requests
  server_.set_server_config("");
  server_.Start();
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                                    vision::TrainPipeline(40, DType::kU8));
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), BatchesOf(local, 0));
  files = CacheFiles(cache_ / "cache");
  EXPECT_EQ(files.at("shard-000000.tar"), whole);
  EXPECT_EQ(files.count("shard-000000.tar.part"), 0u);
  // The second server's log: shard 0 fetched from what had arrived (its
  // progress, written after the bytes, may be a piece short of the .part's
  // length if the kill fell between the two writes), not from the start.
  bool resumed = false;
  const std::vector<std::string> log = server_.AccessLog();
  for (size_t i = before; i < log.size(); ++i) {
    const std::string& line = log[i];
    if (line.find("/train/shard-000000.tar 206") == std::string::npos) continue;
    const size_t at = line.find("bytes=");
    ASSERT_NE(at, std::string::npos) << line;
    const uint64_t first = std::stoull(line.substr(at + 6));
    EXPECT_GT(first, 0u) << line;
    EXPECT_LE(first, left) << line;
    resumed = true;
  }
  EXPECT_TRUE(resumed);

  // A .part of the whole length but wrong bytes: checked, refused, fetched
  // again from the start.
  const std::string cached = [&] {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(cache_ / "cache")) {
      if (e.path().filename() == "shard-000001.tar") return e.path().string();
    }
    return std::string();
  }();
  ASSERT_FALSE(cached.empty());
  std::vector<uint8_t> garbage = ReadBytes(cached);
  for (size_t i = 0; i < garbage.size(); i += 97) garbage[i] ^= 0x5a;
  fs::remove(cached);
  WriteBytes(cached + ".part", garbage);
  const std::shared_ptr<ShardDataset> again = Served(Cached());
  Read(*again, again->shard_starts()[1]);
  EXPECT_EQ(ReadBytes(cached), ReadBytes(LocalPack() + "/shard-000001.tar"));
}

// SIGKILL mid-epoch: a loader with two workers and the prefetcher, killed
// once one shard is whole in the cache and another is half downloaded.
// The rerun gives the local batches, and every shard left in the cache is
// the local one, byte for byte.
TEST_F(ShardCacheTest, AnEpochKilledMidDownloadThenRerunGivesTheSameBatches) {
  server_.Stop();
  server_.set_server_config("limit_rate 300k;");
  server_.Start();
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      BatchesOf(Served(Cached()), 2);
    } catch (...) {
    }
    _exit(0);
  }
  bool mid_epoch = false;
  for (int i = 0; i < 2000 && !mid_epoch; ++i) {
    bool whole = false, part = false;
    for (const auto& [name, size] : CacheFiles(cache_ / "cache")) {
      whole = whole || (name.size() > 4 && name.compare(name.size() - 4, 4, ".tar") == 0);
      part = part ||
             (name.size() > 5 && name.compare(name.size() - 5, 5, ".part") == 0 && size > 0);
    }
    mid_epoch = whole && part;
    if (!mid_epoch) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(mid_epoch) << "the child never had a shard whole and another under way";

  server_.Stop();
  server_.set_server_config("");
  server_.Start();
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                                    vision::TrainPipeline(40, DType::kU8));
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), BatchesOf(local, 0));
  size_t whole = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(cache_ / "cache")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".part"), std::string::npos) << name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tar") == 0) {
      EXPECT_EQ(ReadBytes(e.path().string()), ReadBytes(LocalPack() + "/" + name)) << name;
      ++whole;
    }
  }
  EXPECT_EQ(whole, ShardDataset::Find(LocalPack()).size());
}

// A record whose bytes on the server do not match its index: the shard
// fails its check twice (downloaded once more, from the start), is taken
// with that record listed beside it (.tar.damaged), and only that record
// fails (a checksum failure, skipped by the error policy): threads and then
// worker processes of the node, over two epochs, download it twice in all.
TEST_F(ShardCacheTest, ARecordDamagedOnTheServerFailsAloneAndItsShardIsDownloadedTwice) {
  const ShardIndex index = ReadShardIndex(root_ / "train/shard-000002.idx");
  ASSERT_GE(index.records.size(), 2u);
  const ShardRecord& bad = index.records[1];
  std::vector<uint8_t> tar = ReadBytes(root_ / "train/shard-000002.tar");
  tar[bad.offset + bad.size / 2] ^= 0x01;
  WriteBytes(root_ / "train/shard-000002.tar", tar);

  const std::shared_ptr<ShardDataset> served = Served(Cached());
  const int64_t records = served->size();
  const std::vector<WorkerMode> modes = testing::kWorkerProcesses
                                            ? std::vector<WorkerMode>{WorkerMode::kThread,
                                                                      WorkerMode::kProcess}
                                            : std::vector<WorkerMode>{WorkerMode::kThread};
  for (WorkerMode mode : modes) {
    for (int epoch = 0; epoch < 2; ++epoch) {
      StatsSnapshot stats;
      testing::BatchesOf(served, 2, mode, ErrorPolicy::kSkip, &stats);
      EXPECT_EQ(stats.delivered_samples, records - 1) << "epoch " << epoch;
      EXPECT_EQ(stats.skipped, 1);
      EXPECT_EQ(stats.errors_by_reason["checksum"], 1);
    }
  }
  // The record alone, by key, through the API.
  try {
    Read(*served, served->shard_starts()[2] + 1);
    FAIL() << "a damaged record was read";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "checksum");
    EXPECT_THAT(e.message(), HasSubstr("CRC-32C mismatch"));
    EXPECT_THAT(e.message(), HasSubstr(bad.key));
  }
  const std::map<std::string, int> gets = TarGets();
  for (const auto& [shard, count] : gets) {
    EXPECT_EQ(count, shard == "shard-000002.tar" ? 2 : 1) << shard;
  }
  const std::map<std::string, uint64_t> files = CacheFiles(cache_ / "cache");
  EXPECT_EQ(files.count("shard-000002.tar"), 1u);
  EXPECT_EQ(files.count("shard-000002.tar.damaged"), 1u);
  EXPECT_EQ(files.count("shard-000001.tar.damaged"), 0u);

  // Fixed on the server, and the shard evicted: downloaded anew, whole, and
  // the list goes with the damage.
  WriteBytes(root_ / "train/shard-000002.tar", ReadBytes(LocalPack() + "/shard-000002.tar"));
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(cache_ / "cache")) {
    if (e.path().filename() == "shard-000002.tar") fs::remove(e.path());
  }
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                                    vision::TrainPipeline(40, DType::kU8));
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), BatchesOf(local, 0));
  EXPECT_EQ(CacheFiles(cache_ / "cache").count("shard-000002.tar.damaged"), 0u);
}

// The path of shard `name` in the cache folder.
std::string CachedPath(const std::string& cache, const std::string& name) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(cache)) {
    if (e.path().filename() == name) return e.path().string();
  }
  return {};
}

// Flips a byte in the middle of record `record` of the cached copy of
// `shard` in place (bit rot: the file, its inode and size unchanged).
void RotCachedRecord(const std::string& cached, const std::string& index, size_t record) {
  const ShardIndex read = ReadShardIndex(index);
  const ShardRecord& r = read.records.at(record);
  std::vector<uint8_t> bytes = ReadBytes(cached);
  bytes.at(r.offset + r.size / 2) ^= 0x10;
  std::FILE* f = std::fopen(cached.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, static_cast<long>(r.offset + r.size / 2), SEEK_SET);
  std::fputc(bytes[r.offset + r.size / 2], f);
  std::fclose(f);
}

// A record damaged in the cache file itself (bit rot, a bad write): the next
// read that fails its check drops the cached copy and downloads it again,
// once, and reads the record again: the epoch is whole (error policy raise),
// with threads and with worker processes. A copy damaged again after its
// repair in the same process is that record's failure.
TEST_F(ShardCacheTest, ARecordDamagedInTheCacheIsRepairedByTheNextRead) {
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                                    vision::TrainPipeline(40, DType::kU8));
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local, 0);
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), want);  // fills the cache
  const std::string cache = cache_ / "cache";

  RotCachedRecord(CachedPath(cache, "shard-000001.tar"), LocalPack() + "/shard-000001.idx", 2);
  if (testing::kWorkerProcesses) {
    EXPECT_EQ(BatchesOf(Served(Cached()), 2, WorkerMode::kProcess), want);
  } else {
    EXPECT_EQ(BatchesOf(Served(Cached()), 2), want);
  }
  RotCachedRecord(CachedPath(cache, "shard-000000.tar"), LocalPack() + "/shard-000000.idx", 0);
  const std::shared_ptr<ShardDataset> served = Served(Cached());
  EXPECT_EQ(BatchesOf(served, 3), want);
  std::map<std::string, int> gets = TarGets();
  EXPECT_EQ(gets["shard-000000.tar"], 2);
  EXPECT_EQ(gets["shard-000001.tar"], 2);
  EXPECT_EQ(gets["shard-000002.tar"], 1);
  EXPECT_EQ(CachedPath(cache, "shard-000001.tar.damaged"), "");
  EXPECT_EQ(ReadBytes(CachedPath(cache, "shard-000001.tar")),
            ReadBytes(LocalPack() + "/shard-000001.tar"));

  // Damaged again in the same process: one repair per shard per process.
  RotCachedRecord(CachedPath(cache, "shard-000000.tar"), LocalPack() + "/shard-000000.idx", 0);
  try {
    Read(*served, 0);
    FAIL() << "a record damaged twice was read";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "checksum");
  }
  EXPECT_EQ(TarGets()["shard-000000.tar"], 2);
  // Another process (a new run) repairs it.
  EXPECT_NO_THROW(Read(*Served(Cached()), 0));
  EXPECT_EQ(TarGets()["shard-000000.tar"], 3);
}

// The disk space files under `folder` take, measured as the kernel frees
// it: the blocks (st_blocks) of the files there, and of the files unlinked
// from it that a process in `pids` still holds open (/proc/PID/fd links
// ending " (deleted)"), each file once.
uint64_t DiskUseUnder(const std::string& folder, const std::vector<pid_t>& pids) {
  std::map<std::pair<dev_t, ino_t>, uint64_t> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      files[{st.st_dev, st.st_ino}] = static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  for (pid_t pid : pids) {
    const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
    for (fs::directory_iterator it(fds, ec), end; !ec && it != end; it.increment(ec)) {
      char target[4096];
      const ssize_t n = ::readlink(it->path().c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      const std::string link(target, static_cast<size_t>(n));
      if (link.rfind(folder, 0) != 0 || link.find(" (deleted)") == std::string::npos) continue;
      struct stat st;
      if (::stat(it->path().c_str(), &st) == 0) {
        files[{st.st_dev, st.st_ino}] = static_cast<uint64_t>(st.st_blocks) * 512;
      }
    }
  }
  uint64_t total = 0;
  for (const auto& [file, bytes] : files) total += bytes;
  return total;
}

// This process and its children (worker processes).
std::vector<pid_t> ThisProcessAndItsChildren() {
  std::vector<pid_t> pids{::getpid()};
  std::error_code ec;
  for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream children(it->path() / "children");
    pid_t pid;
    while (children >> pid) pids.push_back(pid);
  }
  return pids;
}

// A pack of many small shards, against a cache of two.
class ShardCacheDiskTest : public testing::ServedPackTest {
 protected:
  static void SetUpTestSuite() {
    testing::PackSpec spec;
    spec.images = 64;
    spec.seed = 13;
    spec.shard_bytes = 120 << 10;
    spec.min_shards = 12;
    MakePack(spec);
  }
};

// cache_limit bounds the disk, not only the names in the folder: sampled
// every millisecond during two epochs with two worker threads and two with
// two worker processes (and the prefetcher), in a shuffled order that
// evicts a shard nearly every read, the space the cache folder takes,
// unlinked files still open included, never exceeds cache_limit plus one
// largest shard per download that can be under way (prefetch_requests plus
// the workers). Before evicted shards' descriptors were closed, it reached
// the whole pack.
TEST_F(ShardCacheDiskTest, TheDiskHoldsNoMoreThanTheLimitPlusTheDownloadsUnderWay) {
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()),
                                                    vision::TrainPipeline(32, DType::kU8));
  uint64_t largest = 0, pack = 0;
  for (const std::string& tar : local->shards()) {
    largest = std::max<uint64_t>(largest, fs::file_size(tar));
    pack += fs::file_size(tar);
  }
  constexpr int kWorkers = 2;
  constexpr int kRequests = 2;
  // As many shards as can be downloaded at once: a smaller limit may evict
  // a shard before its reader opens it, every time under a loaded ASan run
  // (the cache then reports that cache_limit is too small, as it should).
  const uint64_t limit = (kWorkers + kRequests) * largest;
  const uint64_t bound = limit + (kWorkers + kRequests) * largest;
  ASSERT_GT(pack, bound + 2 * largest) << "the test needs a pack well over the bound";
  RemoteOptions options;
  options.max_attempts = 3;
  options.backoff_s = 0.01;
  options.cache_limit = limit;
  options.prefetch_requests = kRequests;
  const std::shared_ptr<ShardDataset> served =
      ServedDataset(WithCache(options), vision::TrainPipeline(32, DType::kU8));
  const std::string folder = fs::canonical(cache_.path()).string() + "/cache";

  const std::vector<std::vector<uint8_t>> want = BatchesOf(local, 0);
  std::vector<WorkerMode> modes{WorkerMode::kThread};
  if (testing::kWorkerProcesses) modes.push_back(WorkerMode::kProcess);
  for (WorkerMode mode : modes) {
    std::atomic<bool> done{false};
    uint64_t peak = 0;
    int samples = 0;
    std::thread watcher([&] {
      std::vector<pid_t> pids = ThisProcessAndItsChildren();
      while (!done.load()) {
        if (samples % 20 == 0) pids = ThisProcessAndItsChildren();
        peak = std::max(peak, DiskUseUnder(folder, pids));
        ++samples;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    // The watcher stops however the epochs end.
    struct Stop {
      std::atomic<bool>* done;
      std::thread* watcher;
      ~Stop() {
        done->store(true);
        watcher->join();
      }
    };
    {
      const Stop stop{&done, &watcher};
      for (int epoch = 0; epoch < 2; ++epoch) {
        EXPECT_EQ(BatchesOf(served, kWorkers, mode), want) << "epoch " << epoch;
      }
    }
    const char* name = mode == WorkerMode::kThread ? "threads" : "processes";
    std::cout << name << ": disk peak " << peak << " bytes, limit " << limit << ", bound "
              << bound << ", pack " << pack << ", " << samples << " samples\n";
    // Worker processes forked while the prefetcher downloads close their
    // copies of those files at once (src/core/inherited_fds.h), so the
    // bound is the same for both.
    EXPECT_LE(peak, bound) << name;
    EXPECT_GE(peak, limit / 2) << name << ": the cache never filled";
  }
  // Evictions happened: far more downloads than shards.
  size_t gets = 0;
  for (const std::string& line : server_.AccessLog()) {
    gets += line.find(" GET /train/shard-") != std::string::npos &&
            line.find(".tar ") != std::string::npos;
  }
  EXPECT_GT(gets, 2 * local->shards().size());
}

TEST_F(ShardCacheTest, ACacheFolderThatCannotBeMadeIsAnErrorNamingIt) {
  WriteBytes(cache_ / "file", {1});
  RemoteOptions options = Cached();
  options.cache_dir = cache_ / "file";
  EXPECT_THAT([&] { Served(options); },
              ::testing::ThrowsMessage<Error>(HasSubstr(cache_ / "file")));
}

}  // namespace
}  // namespace feedline::storage
