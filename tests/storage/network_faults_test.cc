// Network faults between the reader and a real nginx that runs inside a
// network namespace the test makes, joined to it by a veth pair
// (tests/storage/net_namespace.h): delay and loss (netfilter,
// tests/storage/packet_delay.h), a slow link
// (tc tbf), the server killed mid-epoch and started again within the retry
// budget, and connections reset mid-transfer (ss -K). Through the API users
// call: every epoch is whole, every sample once, bit-identical to the local
// pack's. Each test moves about a megabyte and takes a few seconds.
//
// They need root and iptables (make test runs as root and installs it);
// elsewhere they fail, saying which is missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
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
#include "tests/storage/packet_delay.h"
#include "tests/storage/seaweedfs_server.h"
#include "tests/storage/served_pack.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

namespace fs = std::filesystem;
using testing::BatchesOf;
using testing::NetNamespace;
using testing::NginxServer;
using testing::PacketDelay;
using testing::SeaweedFsServer;
using testing::TempDir;

constexpr int64_t kFaultImages = testing::PackSpec().images;

class NetworkFaultsTest : public testing::ServedPackTest {
 protected:
  void SetUp() override {
    const std::string why = NetNamespace::Unavailable();
    // make test runs as root with iproute2 installed (scripts/install_deps.sh).
    if (!why.empty()) GTEST_FAIL() << "no network namespace: " << why;
    netns_ = std::make_unique<NetNamespace>();
    CopyPack();
    server_.set_network_namespace(netns_->path(), netns_->address());
    server_.Start();
    local_ = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()), Pipeline());
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
    return ServedDataset(options, Pipeline());
  }
  RemoteOptions Cached() const { return WithCache(Patient()); }

  std::unique_ptr<NetNamespace> netns_;
  std::shared_ptr<ShardDataset> local_;
};

// The shortest of `tries` TCP handshakes with the server: one round trip.
double HandshakeMs(const std::string& address, int port, int tries) {
  double best = 1e9;
  for (int i = 0; i < tries; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, address.c_str(), &to.sin_addr);
    const auto start = std::chrono::steady_clock::now();
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ::close(fd);
    if (up) best = std::min(best, ms);
  }
  return best;
}

// Delay and loss made with netfilter (tests/storage/packet_delay.h) rather
// than tc netem, which this machine's kernel lacks (no sch_netem): 20 ms
// more on every round trip, 1 % of the packets lost each way. The handshake shows the delay and iptables'
// counters the losses, so the test knows it tested something.
TEST_F(NetworkFaultsTest, DelayAndLossFromNetfilterLeaveTheEpochWholeAndBitIdentical) {
  const std::string why = PacketDelay::Unavailable(*netns_);
  ASSERT_TRUE(why.empty()) << why;
  const double before_ms = HandshakeMs(netns_->address(), server_.port(), 5);
  PacketDelay faults(*netns_, /*delay_ms=*/20, /*loss=*/0.01);
  const double after_ms = HandshakeMs(netns_->address(), server_.port(), 5);
  EXPECT_GE(after_ms, 20.0) << "before: " << before_ms << " ms";
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local_, 0);
  EXPECT_EQ(BatchesOf(Served(Patient()), 2), want);  // ranged GETs
  EXPECT_EQ(BatchesOf(Served(Cached()), 2), want);   // whole shards into the cache
  EXPECT_TRUE(faults.Running());
  EXPECT_GT(faults.DelayedPackets(), 100u);
  EXPECT_GT(faults.DroppedPackets(), 0u) << "no packet was lost: the test tested no loss";
  std::cout << "handshake " << before_ms << " ms, then " << after_ms << " ms; "
            << faults.DelayedPackets() << " packets delayed, " << faults.DroppedPackets()
            << " dropped\n";
}

// Sets variables for one test and puts back what was there.
class ScopedVariables {
 public:
  void Set(const std::string& name, const std::string& value) {
    Save(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void Unset(const std::string& name) {
    Save(name);
    ::unsetenv(name.c_str());
  }
  ~ScopedVariables() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  void Save(const std::string& name) {
    if (saved_.count(name) != 0) return;
    const char* old = std::getenv(name.c_str());
    saved_[name] = old == nullptr ? std::optional<std::string>() : std::string(old);
  }

  std::map<std::string, std::optional<std::string>> saved_;
};

// The same over S3: SeaweedFS inside the namespace, signed requests
// through the delayed, lossy link.
TEST_F(NetworkFaultsTest, DelayAndLossFromNetfilterLeaveAnS3EpochWholeAndBitIdentical) {
  const std::string why = PacketDelay::Unavailable(*netns_);
  ASSERT_TRUE(why.empty()) << why;
  SeaweedFsServer s3;
  s3.set_network_namespace(netns_->path(), netns_->address());
  s3.Start();
  s3.PutFolder(LocalPack(), "train");
  TempDir home;
  ScopedVariables env;
  env.Set("AWS_ACCESS_KEY_ID", SeaweedFsServer::kAccessKey);
  env.Set("AWS_SECRET_ACCESS_KEY", SeaweedFsServer::kSecretKey);
  env.Set("AWS_ENDPOINT_URL", s3.Endpoint());
  env.Set("AWS_REGION", "us-east-1");
  env.Set("HOME", home.path().string());  // no ~/.aws of this machine's
  env.Unset("AWS_SESSION_TOKEN");
  env.Unset("AWS_PROFILE");
  PacketDelay faults(*netns_, /*delay_ms=*/20, /*loss=*/0.01);
  auto open = [&](const RemoteOptions& options) {
    return std::make_shared<ShardDataset>(ShardDataset::Find("s3://feedline/train/", options),
                                          Pipeline(), std::vector<std::string>{}, 0, options);
  };
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local_, 0);
  EXPECT_EQ(BatchesOf(open(Patient()), 2), want);
  EXPECT_EQ(BatchesOf(open(Cached()), 2), want);
  EXPECT_TRUE(faults.Running());
  EXPECT_GT(faults.DelayedPackets(), 100u);
  EXPECT_GT(faults.DroppedPackets(), 0u) << "no packet was lost: the test tested no loss";
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
