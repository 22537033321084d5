// Fetching ahead (RemoteOptions::prefetch_bytes, prefetch_requests) through
// the API users call: a DataLoader over a ShardDataset that a real nginx
// serves on loopback, with a shard cache. nginx's access log gives each
// request's start: the shards are requested in the order the epoch's plan
// first needs them, before the loader's reads would ask for them, never more
// than the byte bound ahead of the delivered batches; a shard the plan still
// needs outlives the ones it has passed when the cache makes room; the
// batches are the local pack's, bit for bit.
#include "src/storage/shard_prefetcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/remote_options.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/storage/shard_order_sampler.h"
#include "feedline/synth/synth.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/served_pack.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::NginxServer;
using testing::TempDir;

constexpr int64_t kPrefetchImages = 48;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A fixed order, as a custom sampler gives.
class FixedOrder : public Sampler {
 public:
  explicit FixedOrder(std::vector<int64_t> order) : order_(std::move(order)) {}
  int64_t size() const override { return static_cast<int64_t>(order_.size()); }
  std::vector<int64_t> Indices(int64_t) const override { return order_; }

 private:
  std::vector<int64_t> order_;
};

// A tar GET from nginx's log: the shard's number and when it began.
struct TarGet {
  size_t shard;
  double start;
  double end;
};

// One epoch of batch size 1 with one worker; the consumer takes `pause_s`
// per batch. Records each batch's bytes and when Next was called and
// returned (the loader reports the delivery in between).
struct Epoch {
  std::vector<std::vector<uint8_t>> batches;
  std::vector<double> asked;
  std::vector<double> got;
};

Epoch RunEpoch(std::shared_ptr<const Dataset> data, std::shared_ptr<const Sampler> sampler,
               double pause_s) {
  LoaderOptions options;
  options.batch_size = 1;
  options.sampler = std::move(sampler);
  options.num_workers = 1;
  options.prefetch_factor = 1;
  options.seed = 5;
  DataLoader loader(std::move(data), options);
  Epoch epoch;
  for (;;) {
    epoch.asked.push_back(Now());
    std::optional<Batch> batch = loader.Next();
    if (!batch) break;
    epoch.got.push_back(Now());
    std::vector<uint8_t> bytes;
    for (int64_t index : batch->indices()) bytes.push_back(static_cast<uint8_t>(index));
    for (int f = 0; f < batch->num_fields(); ++f) {
      const uint8_t* p = static_cast<const uint8_t*>(batch->field(f).raw());
      bytes.insert(bytes.end(), p, p + batch->field(f).bytes());
    }
    epoch.batches.push_back(std::move(bytes));
    std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
  }
  epoch.asked.pop_back();
  return epoch;
}

class ShardPrefetcherTest : public testing::ServedPackTest {
 protected:
  static void SetUpTestSuite() {
    testing::PackSpec spec;
    spec.images = kPrefetchImages;
    spec.seed = 9;
    spec.shard_bytes = 240 << 10;
    spec.min_shards = 6;
    MakePack(spec);
  }

  void SetUp() override {
    ServedPackTest::SetUp();
    local_ = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()), Pipeline());
    for (const std::string& tar : local_->shards()) tar_bytes_.push_back(fs::file_size(tar));
  }

  static vision::Pipeline Pipeline() { return vision::TrainPipeline(32, DType::kU8); }
  uint64_t LargestShard() const { return *std::max_element(tar_bytes_.begin(), tar_bytes_.end()); }

  RemoteOptions Cached(uint64_t prefetch_bytes, uint64_t cache_limit = 0,
                       int prefetch_requests = 2) const {
    RemoteOptions options;
    options.max_attempts = 3;
    options.backoff_s = 0.01;
    options.cache_limit = cache_limit;
    options.prefetch_bytes = prefetch_bytes;
    options.prefetch_requests = prefetch_requests;
    return WithCache(options);
  }
  std::shared_ptr<ShardDataset> Served(const RemoteOptions& options) const {
    return ServedDataset(options, Pipeline());
  }

  // The tar GETs the server saw, in the order they began.
  std::vector<TarGet> TarGets() const {
    std::vector<TarGet> gets;
    for (const std::string& line : server_.AccessLog()) {
      std::istringstream fields(line);
      std::string connection, method, uri, status, range;
      double end = 0, seconds = 0;
      fields >> connection >> method >> uri >> status >> range >> end >> seconds;
      if (method != "GET" || uri.size() < 4 || uri.compare(uri.size() - 4, 4, ".tar") != 0) {
        continue;
      }
      const size_t digits = uri.rfind('-') + 1;
      gets.push_back({static_cast<size_t>(std::stoul(uri.substr(digits, 6))), end - seconds, end});
    }
    std::stable_sort(gets.begin(), gets.end(),
                     [](const TarGet& a, const TarGet& b) { return a.start < b.start; });
    return gets;
  }

  // Each shard in the order `order` first needs it, and its last use.
  std::vector<PlannedShard> PlanOf(const std::vector<int64_t>& order) const {
    std::vector<PlannedShard> plan;
    std::map<int64_t, size_t> entry;
    for (size_t at = 0; at < order.size(); ++at) {
      const int64_t shard = local_->shard_of(order[at]);
      if (entry.count(shard) == 0) {
        entry[shard] = plan.size();
        plan.push_back({static_cast<size_t>(shard), 0});
      }
      plan[entry[shard]].last_use = static_cast<int64_t>(at);
    }
    return plan;
  }

  std::shared_ptr<ShardDataset> local_;
  std::vector<uint64_t> tar_bytes_;
};

TEST_F(ShardPrefetcherTest, ShardsAreFetchedInPlanOrderAheadOfUseWithinTheByteBound) {
  // Shards in a shuffled order, each read through (window 1).
  auto sampler = std::make_shared<ShardOrderSampler>(local_->shard_starts(), local_->size(),
                                                     /*window=*/1, /*seed=*/3);
  const std::vector<int64_t> order = sampler->Indices(0);
  const std::vector<PlannedShard> plan = PlanOf(order);
  std::vector<size_t> plan_shards;
  for (const PlannedShard& p : plan) plan_shards.push_back(p.shard);
  ASSERT_FALSE(std::is_sorted(plan_shards.begin(), plan_shards.end()))
      << "the test needs a plan whose order is not the shards' own";

  const Epoch want = RunEpoch(local_, sampler, 0);
  // Two of the largest shards ahead at most, one request at a time (so
  // that the server sees them in the order they were started).
  const uint64_t bound = 2 * LargestShard();
  const Epoch served = RunEpoch(Served(Cached(bound, 0, /*prefetch_requests=*/1)), sampler, 0.04);
  EXPECT_EQ(served.batches, want.batches);

  const std::vector<TarGet> gets = TarGets();
  std::vector<size_t> fetched;
  for (const TarGet& get : gets) fetched.push_back(get.shard);
  // Each shard once, in the plan's order.
  EXPECT_EQ(fetched, plan_shards);
  ASSERT_EQ(gets.size(), plan.size());
  // One request at a time, though the byte bound allowed two: none began
  // before the one before it had ended (to nginx's millisecond).
  for (size_t p = 1; p < gets.size(); ++p) {
    EXPECT_GE(gets[p].start + 0.002, gets[p - 1].end) << "shard " << gets[p].shard;
  }

  size_t checked_ahead = 0;
  for (size_t p = 0; p < plan.size(); ++p) {
    // Ahead of use: requested before the loader could have asked for it.
    // With one worker and two batches in flight, the loader reads the
    // shard's first record once the batch two before it has been handed out
    // and let go; the plan lets the prefetcher start it as soon as the shard
    // two places earlier in the plan is passed, the previous shard's records
    // before. Checked where that shard has at least 4 records (a margin of
    // a few batches, of 40 ms each).
    if (p >= 2) {
      const int64_t first = plan[p - 1].last_use + 1;
      const int64_t previous = first - (plan[p - 2].last_use + 1);
      if (previous >= 4) {
        ++checked_ahead;
        EXPECT_LT(gets[p].start, served.got[static_cast<size_t>(first - 3)])
            << "shard " << plan[p].shard << " (plan position " << p << ")";
      }
    }
    // Within the bound: when it began, the shards begun and not yet passed
    // by the delivered batches (at most those Next had been asked for) are
    // at most `bound` bytes. The log's times are nginx's, to the
    // millisecond and taken when its event loop last woke, so a request
    // that the delivery of a batch let start may seem to begin a little
    // before Next was asked for it: 5 ms of slack, an eighth of a batch.
    const double at = gets[p].start + 0.005;
    const int64_t delivered =
        std::upper_bound(served.asked.begin(), served.asked.end(), at) - served.asked.begin();
    uint64_t ahead = 0;
    for (size_t q = 0; q <= p; ++q) {
      if (plan[q].last_use >= delivered) ahead += tar_bytes_[plan[q].shard];
    }
    EXPECT_LE(ahead, bound) << "when shard " << plan[p].shard << " was requested";
  }
  EXPECT_GE(checked_ahead, plan.size() / 2);
}

TEST_F(ShardPrefetcherTest, ShardsThePlanHasPassedAreEvictedBeforeOnesItStillNeeds) {
  // Shard A's first records, then the other shards whole, then A's last
  // ones: A is the least recently used shard when the cache is full, but the
  // plan still needs it; the others, once passed, go first.
  const std::vector<int64_t>& starts = local_->shard_starts();
  const int64_t a_end = starts[1];
  ASSERT_GE(a_end, 2);
  std::vector<int64_t> order;
  for (int64_t i = 0; i < a_end / 2; ++i) order.push_back(i);
  for (int64_t i = a_end; i < local_->size(); ++i) order.push_back(i);
  for (int64_t i = a_end / 2; i < a_end; ++i) order.push_back(i);
  auto sampler = std::make_shared<FixedOrder>(order);
  const Epoch want = RunEpoch(local_, sampler, 0);
  const uint64_t limit = 3 * LargestShard();
  const Epoch served = RunEpoch(Served(Cached(limit, limit)), sampler, 0.01);
  EXPECT_EQ(served.batches, want.batches);
  std::map<size_t, int> gets;
  for (const TarGet& get : TarGets()) ++gets[get.shard];
  EXPECT_EQ(gets[0], 1) << "shard 0 was evicted while the plan still needed it";
  for (size_t shard = 1; shard < tar_bytes_.size(); ++shard) EXPECT_EQ(gets[shard], 1);
}

// The bytes of every file under `folder` (whole shards, .part files of
// downloads under way), and how many of them are .part files.
struct FolderBytes {
  uint64_t bytes = 0;
  int parts = 0;
};
FolderBytes BytesUnder(const std::string& folder) {
  FolderBytes total;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code gone;  // a file renamed or evicted while we look
    if (!it->is_regular_file(gone)) continue;
    const uint64_t size = it->file_size(gone);
    if (gone) continue;
    total.bytes += size;
    const std::string name = it->path().filename().string();
    total.parts += name.size() > 5 && name.compare(name.size() - 5, 5, ".part") == 0;
  }
  return total;
}

// Measured, not inferred: the cache folder's bytes sampled every
// millisecond while two workers and the prefetcher fill it, over two
// epochs of a pack three times the limit. It never holds more than
// cache_limit plus the shards in flight (one per prefetch request and one
// per worker, each at most the largest shard); the batches are the local
// ones.
TEST_F(ShardPrefetcherTest, TheCacheNeverHoldsMoreThanItsLimitPlusTheShardsInFlight) {
  server_.Stop();
  server_.set_server_config("limit_rate 4m;");  // downloads that overlap and last
  server_.Start();
  const uint64_t limit = 2 * LargestShard();
  uint64_t pack_bytes = 0;
  for (uint64_t bytes : tar_bytes_) pack_bytes += bytes;
  ASSERT_GE(pack_bytes, 3 * limit) << "the test needs a pack that does not fit";
  constexpr int kWorkers = 2;
  constexpr int kRequests = 2;
  std::shared_ptr<ShardDataset> served = Served(Cached(limit, limit, kRequests));

  std::atomic<bool> done{false};
  FolderBytes peak;
  int max_parts = 0;
  int samples = 0;
  std::thread watcher([&] {
    while (!done.load()) {
      const FolderBytes now = BytesUnder(cache_ / "cache");
      if (now.bytes > peak.bytes) peak = now;
      max_parts = std::max(max_parts, now.parts);
      ++samples;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const std::vector<std::vector<uint8_t>> want = testing::BatchesOf(local_, 0);
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(testing::BatchesOf(served, kWorkers), want) << "epoch " << epoch;
  }
  done = true;
  watcher.join();
  // The dataset goes, and its prefetcher with it, whose downloads still
  // under way finish first: each makes room once its shard is in place, so
  // only then are the whole shards alone within the limit (measured while
  // a download had just put its shard in place and not yet made room, they
  // were one shard over it: a clean-clone ASan run, 2026-12-03). Downloads
  // left behind would be .part files, counted as in flight.
  served.reset();
  const FolderBytes after = BytesUnder(cache_ / "cache");
  uint64_t part_bytes = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(cache_ / "cache")) {
    const std::string name = e.path().filename().string();
    std::error_code gone;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".part") == 0) {
      part_bytes += e.file_size(gone);
    }
  }
  EXPECT_LE(after.bytes - std::min(after.bytes, part_bytes), limit);

  const uint64_t in_flight = (kRequests + kWorkers) * LargestShard();
  EXPECT_LE(peak.bytes, limit + in_flight)
      << "with " << peak.parts << " downloads under way; limit " << limit;
  EXPECT_GT(max_parts, 0) << "no download was seen under way in " << samples << " samples";
  EXPECT_GE(peak.bytes, limit / 2) << "the cache never filled: the limit was not tested";
  // The second epoch found shards evicted and fetched them again.
  EXPECT_GT(TarGets().size(), tar_bytes_.size());
  std::cout << "cache peak " << peak.bytes << " bytes (" << peak.parts << " .part), limit "
            << limit << ", bound " << limit + in_flight << ", " << samples << " samples\n";
}

TEST_F(ShardPrefetcherTest, WithoutPrefetchingEachShardIsFetchedByItsFirstRead) {
  auto sampler = std::make_shared<ShardOrderSampler>(local_->shard_starts(), local_->size(),
                                                     /*window=*/1, /*seed=*/3);
  const Epoch want = RunEpoch(local_, sampler, 0);
  const Epoch served = RunEpoch(Served(Cached(0)), sampler, 0.02);
  EXPECT_EQ(served.batches, want.batches);
  const std::vector<PlannedShard> plan = PlanOf(sampler->Indices(0));
  const std::vector<TarGet> gets = TarGets();
  ASSERT_EQ(gets.size(), plan.size());
  // The reads' own downloads: never before the batch two before the
  // shard's first one was handed out (the contrast to the test above).
  for (size_t p = 1; p < plan.size(); ++p) {
    const int64_t first = plan[p - 1].last_use + 1;
    EXPECT_GE(gets[p].start + 0.005, served.asked[static_cast<size_t>(first - 2)])
        << "shard " << plan[p].shard;
  }
}

TEST(RemoteOptions, PrefetchRequestsOutOfRangeAreRefusedNamingTheOption) {
  RemoteOptions options;
  options.prefetch_requests = 0;
  EXPECT_THAT([&] { CheckRemoteOptions(options); },
              ::testing::ThrowsMessage<Error>(HasSubstr("prefetch_requests must be >= 1, got 0")));
}

}  // namespace
}  // namespace feedline::storage
