// A pack served over HTTP by a real nginx on loopback, read through the API
// users call (ShardDataset, DataLoader): the same samples and batches as the
// local pack, and failures that end in clear errors, never a hang.
#include "src/storage/http_pack_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/storage/shard_index.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/image_folder.h"
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

constexpr int64_t kImages = testing::PackSpec().images;

using testing::QuickRetries;

std::vector<uint8_t> ImageOf(const Dataset& data, int64_t index) {
  SampleContext ctx(/*seed=*/7, /*epoch=*/0, index);
  Sample sample;
  data.Get(index, sample, ctx);
  const Tensor& image = sample["image"];
  const uint8_t* p = static_cast<const uint8_t*>(image.raw());
  std::vector<uint8_t> bytes(p, p + image.bytes());
  bytes.push_back(static_cast<uint8_t>(*sample["label"].data<int64_t>()));
  return bytes;
}

// One packed folder for the suite; each test serves a copy of it (some
// damage theirs).
class HttpPackStoreTest : public testing::ServedPackTest {
 protected:
  // The served copy's file `name`, on disk.
  std::string ServedFile(const std::string& name) const { return root_ / ("train/" + name); }
};

TEST_F(HttpPackStoreTest, AServedPackGivesTheLocalPacksSamples) {
  const std::vector<std::string> indexes = ShardDataset::Find(server_.Url("train/"), QuickRetries());
  ASSERT_EQ(indexes.size(), ShardDataset::Find(LocalPack()).size());
  EXPECT_EQ(indexes.front(), server_.Url("train/shard-000000.idx"));
  // Without the trailing slash too.
  EXPECT_EQ(ShardDataset::Find(server_.Url("train"), QuickRetries()), indexes);

  const vision::Pipeline pipeline = vision::TrainPipeline(48, DType::kU8);
  const ShardDataset local(ShardDataset::Find(LocalPack()), pipeline);
  const ShardDataset served(indexes, pipeline, {}, 0, QuickRetries());
  ASSERT_EQ(served.size(), kImages);
  EXPECT_EQ(served.classes(), local.classes());
  EXPECT_EQ(served.labels(), local.labels());
  EXPECT_EQ(served.shard_starts(), local.shard_starts());
  EXPECT_EQ(served.shards().front(), server_.Url("train/shard-000000.tar"));
  EXPECT_EQ(served.Source(3), server_.Url("train/shard-000000.tar:") + local.key(3));
  for (int64_t i = 0; i < kImages; ++i) EXPECT_EQ(ImageOf(served, i), ImageOf(local, i)) << i;

  // A brace list, remote or local: those shards, in its order.
  const std::vector<std::string> listed =
      ShardDataset::Find(server_.Url("train/shard-{000001..000002}.tar"));
  EXPECT_EQ(listed, (std::vector<std::string>{indexes[1], indexes[2]}));
  const ShardDataset two(listed, pipeline);
  const std::vector<int64_t>& starts = local.shard_starts();
  EXPECT_EQ(two.size(), (starts.size() > 3 ? starts[3] : local.size()) - starts[1]);
  EXPECT_EQ(ShardDataset::Find(LocalPack() + "/shard-{000000,000002}.idx"),
            (std::vector<std::string>{LocalPack() + "/shard-000000.idx",
                                      LocalPack() + "/shard-000002.idx"}));
  EXPECT_THAT([&] { ShardDataset::Find(server_.Url("train/shard-{0..1}")); },
              ::testing::ThrowsMessage<Error>(HasSubstr("a brace list names shards")));

  // One shard's URL, .tar or .idx, is that shard (the val pipeline: no
  // augmentation drawn from the index, which differs here).
  const vision::Pipeline val = vision::ValPipeline(40, 32, DType::kU8);
  const ShardDataset one(ShardDataset::Find(server_.Url("train/shard-000001.tar")), val);
  const ShardDataset local_val(ShardDataset::Find(LocalPack()), val);
  EXPECT_EQ(one.size(), local.shard_starts()[2] - local.shard_starts()[1]);
  EXPECT_EQ(ImageOf(one, 0), ImageOf(local_val, local.shard_starts()[1]));
}

// Records come from ranged GETs of the tars (nothing fetched whole but the
// small files), over a few kept-alive connections.
TEST_F(HttpPackStoreTest, RecordsAreRangedGetsOverKeptConnections) {
  const ShardDataset served(ShardDataset::Find(server_.Url("train/")),
                            vision::ValPipeline(40, 32, DType::kU8));
  const size_t shards = served.shards().size();
  const size_t setup_requests = server_.AccessLog(3 + 2 * shards).size();
  // pack.txt twice (Find, the dataset), classes.txt, an index GET and a tar
  // HEAD per shard.
  EXPECT_EQ(setup_requests, 3 + 2 * shards);
  for (int64_t i = 0; i < served.size(); ++i) ImageOf(served, i);
  const std::vector<std::string> log = server_.AccessLog(setup_requests + kImages);
  ASSERT_EQ(log.size(), setup_requests + kImages);
  for (size_t i = setup_requests; i < log.size(); ++i) {
    EXPECT_THAT(log[i], HasSubstr(" GET /train/shard-"));
    EXPECT_THAT(log[i], HasSubstr(".tar 206"));
  }
  // Find's client, and the dataset's one handle.
  EXPECT_EQ(server_.Connections(), 2u);
  EXPECT_EQ(served.open_shards(), 1u);
  EXPECT_EQ(served.max_open_shards(), 0u);
}

TEST_F(HttpPackStoreTest, BatchesAreBitIdenticalToTheLocalPacksForAnyWorkerCount) {
  const vision::Pipeline pipeline = vision::TrainPipeline(40, DType::kU8);
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(LocalPack()), pipeline);
  const auto served = std::make_shared<ShardDataset>(ShardDataset::Find(server_.Url("train/")),
                                                     pipeline, std::vector<std::string>{}, 0,
                                                     QuickRetries());
  const std::vector<std::vector<uint8_t>> want = BatchesOf(local, 0);
  ASSERT_EQ(want.size(), 5u);
  for (int workers : {1, 3}) {
    EXPECT_EQ(BatchesOf(served, workers), want) << workers << " worker threads";
  }
  // Worker processes: each forked child opens its own connections.
  if (testing::kWorkerProcesses) {
    EXPECT_EQ(BatchesOf(served, 2, WorkerMode::kProcess), want) << "2 worker processes";
  }
  // Threads share a handle each: never more than the threads that read at
  // once (3 workers) and the one the dataset was built with.
  EXPECT_LE(served->open_shards(), 4u);
}

TEST_F(HttpPackStoreTest, AMissingPackOrShardIsAnErrorNamingTheUrl) {
  EXPECT_THAT([&] { ShardDataset::Find(server_.Url("absent/"), QuickRetries()); },
              ::testing::ThrowsMessage<Error>(HasSubstr(
                  server_.Url("absent/pack.txt") + ": HTTP 404 (not found): a pack over HTTP")));
  EXPECT_THAT([&] { ShardDataset::Find(server_.Url("train/shard-*.tar"), QuickRetries()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("glob patterns are not read over HTTP")));
  // A brace list past the last shard: the first missing one is named.
  EXPECT_THAT(
      [&] {
        ShardDataset(ShardDataset::Find(server_.Url("train/shard-{000000..000099}.tar")),
                     vision::TrainPipeline(32), {}, 0, QuickRetries());
      },
      ::testing::ThrowsMessage<Error>(
          HasSubstr(".idx: cannot open shard index, nor is ")));
  const std::vector<std::string> indexes = ShardDataset::Find(server_.Url("train/"), QuickRetries());
  fs::remove(ServedFile("shard-000001.tar"));
  EXPECT_THAT(
      [&] { ShardDataset(indexes, vision::TrainPipeline(32), {}, 0, QuickRetries()); },
      ::testing::ThrowsMessage<Error>(HasSubstr(server_.Url("train/shard-000001.tar") +
                                                ": cannot open shard: HTTP 404 (not found)")));
  // An index missing with its tar (a tar alone is indexed on first read).
  fs::remove(ServedFile("shard-000000.idx"));
  fs::remove(ServedFile("shard-000000.tar"));
  EXPECT_THAT(
      [&] { ShardDataset(indexes, vision::TrainPipeline(32), {}, 0, QuickRetries()); },
      ::testing::ThrowsMessage<Error>(HasSubstr(server_.Url("train/shard-000000.idx") +
                                                ": cannot open shard index, nor is " +
                                                server_.Url("train/shard-000000.tar") +
                                                " there to index: HTTP 404 (not found)")));
  // A local and a remote shard together.
  std::vector<std::string> mixed = {ShardDataset::Find(LocalPack()).front(), indexes.back()};
  EXPECT_THAT([&] { ShardDataset(mixed, vision::TrainPipeline(32)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("partly local files and partly URLs")));
}

TEST_F(HttpPackStoreTest, DamageIsCaughtAsLocallyByTheIndexAndTheChecksums) {
  const ShardIndex index = ReadShardIndex(ServedFile("shard-000001.idx"));
  std::vector<uint8_t> tar = ReadBytes(ServedFile("shard-000001.tar"));
  tar[index.records[1].offset + index.records[1].size / 2] ^= 0x01;
  WriteBytes(ServedFile("shard-000001.tar"), tar);
  const ShardDataset served(ShardDataset::Find(server_.Url("train/"), QuickRetries()),
                            vision::TrainPipeline(32), {}, 0, QuickRetries());
  const int64_t damaged = served.shard_starts()[1] + 1;
  try {
    ImageOf(served, damaged);
    FAIL() << "a damaged record was read";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "checksum");
    EXPECT_THAT(e.message(), HasSubstr("CRC-32C mismatch"));
    EXPECT_THAT(e.message(), HasSubstr(server_.Url("train/shard-000001.tar")));
  }
  EXPECT_NO_THROW(ImageOf(served, damaged + 1));

  std::vector<uint8_t> idx = ReadBytes(ServedFile("shard-000002.idx"));
  idx[60] ^= 0xFF;
  WriteBytes(ServedFile("shard-000002.idx"), idx);
  EXPECT_THAT(
      [&] { ShardDataset(ShardDataset::Find(server_.Url("train/")), vision::TrainPipeline(32)); },
      ::testing::ThrowsMessage<Error>(HasSubstr(server_.Url("train/shard-000002.idx") +
                                                ": index checksum mismatch")));
}

// A shard that disappears after the dataset was built: its records fail
// (HTTP 404, not retried) and the error policy handles them; the rest load.
TEST_F(HttpPackStoreTest, AShardGoneMidRunIsHandledByTheErrorPolicy) {
  const auto served = std::make_shared<ShardDataset>(
      ShardDataset::Find(server_.Url("train/")), vision::TrainPipeline(32),
      std::vector<std::string>{}, 0, QuickRetries());
  fs::remove(ServedFile("shard-000001.tar"));
  const int64_t lost = served->shard_starts()[2] - served->shard_starts()[1];
  StatsSnapshot stats;
  int64_t rows = 0;
  for (const std::vector<uint8_t>& batch : BatchesOf(served, 2, WorkerMode::kThread,
                                                     ErrorPolicy::kSkip, &stats)) {
    rows += static_cast<int64_t>(batch.size() > 0);
  }
  EXPECT_GT(rows, 0);
  EXPECT_EQ(stats.skipped, lost);
  EXPECT_EQ(stats.errors_by_reason.at("io"), lost);
  try {
    ImageOf(*served, served->shard_starts()[1]);
    FAIL() << "a record of a removed shard was read";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "io");
    EXPECT_THAT(e.message(), HasSubstr(server_.Url("train/shard-000001.tar") + ": bytes "));
    EXPECT_THAT(e.message(), HasSubstr("HTTP 404 (not found)"));
  }
}

// The server gone: every read fails after its bounded retries (a clear
// SampleError naming the URL and curl's error), the epoch ends under skip,
// and reads succeed again once the server is back.
TEST_F(HttpPackStoreTest, AServerThatIsGoneFailsSamplesAfterBoundedRetries) {
  const vision::Pipeline pipeline = vision::TrainPipeline(32);
  const auto served = std::make_shared<ShardDataset>(
      ShardDataset::Find(server_.Url("train/")), pipeline, std::vector<std::string>{}, 0, QuickRetries());
  const std::vector<uint8_t> first = ImageOf(*served, 0);
  server_.Stop();
  try {
    ImageOf(*served, 0);
    FAIL() << "read from a stopped server";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "io");
    EXPECT_THAT(e.message(), HasSubstr(server_.Url("train/shard-000000.tar") + ": bytes "));
    EXPECT_THAT(e.message(), HasSubstr("Couldn't connect to server"));
    EXPECT_THAT(e.message(), HasSubstr("the retry budget of 1.0 s spent"));
  }
  StatsSnapshot stats;
  EXPECT_TRUE(BatchesOf(served, 2, WorkerMode::kThread, ErrorPolicy::kSkip, &stats).empty());
  EXPECT_EQ(stats.skipped, kImages);
  EXPECT_THAT([&] { BatchesOf(served, 2); },
              ::testing::ThrowsMessage<SampleError>(HasSubstr("Couldn't connect to server")));
  server_.Start();
  EXPECT_EQ(ImageOf(*served, 0), first);
  EXPECT_EQ(BatchesOf(served, 2).size(), 5u);
}

// The server stopped mid-epoch and back within the retry budget: the epoch
// completes with every sample once, bit-identical to the local pack's.
// The server stopped mid-epoch for `outage` and started again, with
// `remote`'s retries: the epoch is every sample once, as the local pack's.
void ExpectAnOutageLeavesTheEpochWhole(NginxServer& server,
                                       const std::string& local_pack, RemoteOptions patient,
                                       std::chrono::milliseconds outage) {
  const vision::Pipeline pipeline = vision::TrainPipeline(40, DType::kU8);
  const auto local = std::make_shared<ShardDataset>(ShardDataset::Find(local_pack), pipeline);
  const auto served = std::make_shared<ShardDataset>(ShardDataset::Find(server.Url("train/")),
                                                     pipeline, std::vector<std::string>{}, 0,
                                                     patient);
  LoaderOptions options;
  options.batch_size = 1;
  options.shuffle = true;
  options.seed = 3;
  options.num_workers = 1;
  options.prefetch_factor = 1;
  size_t at_stop = 0;
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
        at_stop = server.AccessLog().size();
        server.Stop();
        restart = std::thread([&] {
          std::this_thread::sleep_for(outage);
          server.Start();
        });
      }
    }
    if (restart.joinable()) restart.join();
    return out;
  };
  const std::vector<std::vector<uint8_t>> want = rows(local, false);
  ASSERT_EQ(want.size(), static_cast<size_t>(kImages));
  // Under the raise policy: a read that failed for good would end the epoch
  // with its error.
  EXPECT_EQ(rows(served, true), want);
  // Most records came from the restarted server: the reads during the
  // outage were retried until it was back.
  ASSERT_GT(at_stop, 0u);
  EXPECT_GE(server.AccessLog(at_stop + kImages / 2).size(), at_stop + kImages / 2);
}

TEST_F(HttpPackStoreTest, AServerBackWithinTheRetryBudgetLeavesTheEpochWhole) {
  RemoteOptions patient = QuickRetries();
  patient.retry_budget_s = 10;
  patient.backoff_s = 0.05;
  ExpectAnOutageLeavesTheEpochWhole(server_, LocalPack(), patient, std::chrono::milliseconds(400));
}

// With the default options (a 60 s budget), a server gone for 10 s.
TEST_F(HttpPackStoreTest, ATenSecondOutageLeavesTheEpochWholeWithTheDefaultOptions) {
  ExpectAnOutageLeavesTheEpochWhole(server_, LocalPack(), RemoteOptions{},
                                    std::chrono::milliseconds(10000));
}

// The server gone for good: the epoch ends with one clear error within one
// retry budget of the first failure, at batch 64 as at batch 8 (each read
// does not run a budget of its own, one after another).
TEST_F(HttpPackStoreTest, AServerGoneForGoodEndsTheEpochWithinOneBudgetAtAnyBatchSize) {
  RemoteOptions options = QuickRetries();
  options.retry_budget_s = 2;
  const vision::Pipeline pipeline = vision::TrainPipeline(32);
  for (const int64_t batch_size : {8, 64}) {
    SCOPED_TRACE("batch " + std::to_string(batch_size));
    server_.Start();
    const auto served = std::make_shared<ShardDataset>(
        ShardDataset::Find(server_.Url("train/")), pipeline, std::vector<std::string>{}, 0,
        options);
    server_.Stop();
    LoaderOptions loader_options;
    loader_options.batch_size = batch_size;
    loader_options.num_workers = 2;
    DataLoader loader(served, loader_options);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THAT([&] { loader.Next(); },
                ::testing::ThrowsMessage<SampleError>(HasSubstr("the retry budget of 2.0 s spent")));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
  }
}

}  // namespace
}  // namespace feedline::storage
