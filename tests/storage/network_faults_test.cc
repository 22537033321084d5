// Network faults between the reader and a real nginx that runs inside a
// network namespace the test makes, joined to it by a veth pair
// (tests/storage/net_namespace.h): delay and loss (tc netem), a slow link
// (tc tbf), the server killed mid-epoch and started again within the retry
// budget, and connections reset mid-transfer (ss -K). Through the API users
// call: every epoch is whole, every sample once, bit-identical to the local
// pack's. Each test moves about a megabyte and takes a few seconds.
//
// They need root (CI runs the suite as root); elsewhere they skip, saying
// why; the netem test also skips, saying so, on a kernel without sch_netem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/synth/synth.h"
#include "tests/storage/batch_bytes.h"
#include "tests/storage/net_namespace.h"
#include "tests/storage/nginx_server.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using testing::BatchesOf;
using testing::NetNamespace;
using testing::NginxServer;
using testing::TempDir;

constexpr int64_t kFaultImages = 24;

class NetworkFaultsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TempDir();
    vision::WriteSyntheticImageFolder(*folder_ / "images", kFaultImages, /*classes=*/4, /*seed=*/5,
                                      /*broken=*/0);
    PackOptions options;
    options.shard_bytes = 200 << 10;
    ASSERT_GT(PackSource(*folder_ / "images", *folder_ / "pack", options).shards, 2);
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }

  void SetUp() override {
    const std::string why = NetNamespace::Unavailable();
    if (!why.empty()) GTEST_SKIP() << "no network namespace: " << why;
    netns_ = std::make_unique<NetNamespace>();
    fs::copy(*folder_ / "pack", root_ / "train", fs::copy_options::recursive);
    server_.set_network_namespace(netns_->path(), netns_->address());
    server_.Start();
    local_ = std::make_shared<ShardDataset>(ShardDataset::Find(*folder_ / "pack"), Pipeline());
  }
  void TearDown() override {
    server_.Stop();
    netns_.reset();
  }

  static vision::Pipeline Pipeline() { return vision::TrainPipeline(40, DType::kU8); }
  static RemoteOptions Patient() {
    RemoteOptions options;
    options.max_attempts = 30;
    options.backoff_s = 0.02;
    options.connect_timeout_s = 2;
    options.stall_timeout_s = 3;
    options.retry_budget_s = 15;
    return options;
  }
  std::shared_ptr<ShardDataset> Served(const RemoteOptions& options) const {
    return std::make_shared<ShardDataset>(ShardDataset::Find(server_.Url("train/"), options),
                                          Pipeline(), std::vector<std::string>{}, 0, options);
  }
  RemoteOptions Cached() const {
    RemoteOptions options = Patient();
    options.cache_dir = cache_ / "cache";
    return options;
  }

  static TempDir* folder_;
  std::unique_ptr<NetNamespace> netns_;
  TempDir root_;
  TempDir cache_;
  NginxServer server_{root_.path().string()};
  std::shared_ptr<ShardDataset> local_;
};

TempDir* NetworkFaultsTest::folder_ = nullptr;

TEST_F(NetworkFaultsTest, DelayAndLossLeaveTheEpochWholeAndBitIdentical) {
  const std::string why = netns_->NetemUnavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  // 10 ms each way, 1 % of the packets lost each way.
  netns_->Impair("netem delay 10ms loss 1%");
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local_, 0);
  EXPECT_EQ(BatchesOf(Served(Patient()), 2), want);  // ranged GETs
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), want);   // whole shards into the cache
}

TEST_F(NetworkFaultsTest, ASlowLinkLeavesTheEpochWholeAndBitIdentical) {
  // 16 Mbit/s each way, a queue of at most 50 ms.
  netns_->Impair("tbf rate 16mbit burst 32kb latency 50ms");
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local_, 0);
  EXPECT_EQ(BatchesOf(Served(Patient()), 2), want);
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), want);
}

// The server killed mid-epoch and back within the retry budget: every
// sample once, as the local pack gives them.
TEST_F(NetworkFaultsTest, AServerKilledMidEpochAndBackWithinTheBudgetLeavesEverySampleOnce) {
  for (const bool cached : {false, true}) {
    SCOPED_TRACE(cached ? "with a cache" : "ranged GETs");
    const std::shared_ptr<ShardDataset> served = Served(cached ? Cached() : Patient());
    LoaderOptions options;
    options.batch_size = 1;
    options.shuffle = true;
    options.seed = 3;
    options.num_workers = 2;
    auto rows = [&](std::shared_ptr<const Dataset> data, bool interrupt) {
      DataLoader loader(std::move(data), options);
      std::vector<std::vector<uint8_t>> out;
      std::thread restart;
      while (std::optional<Batch> batch = loader.Next()) {
        const Tensor& image = batch->field(0);
        const uint8_t* p = static_cast<const uint8_t*>(image.raw());
        out.emplace_back(p, p + image.bytes());
        out.back().push_back(static_cast<uint8_t>(batch->indices()[0]));
        if (interrupt && out.size() == 2) {
          server_.Stop();
          restart = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            server_.Start();
          });
        }
      }
      if (restart.joinable()) restart.join();
      return out;
    };
    const std::vector<std::vector<uint8_t>> want = rows(local_, false);
    ASSERT_EQ(want.size(), static_cast<size_t>(kFaultImages));
    // Under the raise policy a read that failed for good would end the
    // epoch with its error.
    EXPECT_EQ(rows(served, true), want);
  }
}

TEST_F(NetworkFaultsTest, ConnectionsResetMidTransferAreRetriedAndTheEpochIsWhole) {
  // Slow answers, so that resets land mid-transfer.
  server_.Stop();
  server_.set_server_config("limit_rate 600k;");
  server_.Start();
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local_, 0);
  for (const bool cached : {false, true}) {
    SCOPED_TRACE(cached ? "with a cache" : "ranged GETs");
    const std::shared_ptr<ShardDataset> served = Served(cached ? Cached() : Patient());
    std::atomic<bool> done{false};
    std::atomic<int> resets{0};
    std::thread resetter([&] {
      while (!done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(120));
        resets += netns_->ResetConnections(server_.port());
      }
    });
    const std::vector<std::vector<uint8_t>> got = BatchesOf(served, 2);
    done = true;
    resetter.join();
    EXPECT_EQ(got, want);
    EXPECT_GT(resets.load(), 0) << "no connection was reset: the test tested nothing";
  }
}

}  // namespace
}  // namespace feedline::storage
