// IterableProducer: the scheduling of an IterableDataset. Each worker opens
// its own stream and fills whole batches from it; the consumer takes them
// round-robin over the workers; with num_workers = 0 the caller reads the
// one stream. Wired here as the engine wires it (a Scheduler, a BatchFiller,
// a ThreadWorkerPool whose body is RunWorker), driven through Next and Reset.
#include "src/loader/iterable_producer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "feedline/error.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"
#include "src/core/mutex.h"
#include "src/loader/batch_filler.h"
#include "src/loader/error_policy.h"
#include "src/loader/scheduler.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/thread_load_backend.h"
#include "src/loader/thread_worker_pool.h"

namespace feedline::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Worker w's stream of epoch e: lengths[w] items "item" = e * 1000 + w * 100 + k.
// Items listed in `bad` (as k) throw a SampleError; a negative length makes
// Open throw.
class SplitStreams : public IterableDataset {
 public:
  explicit SplitStreams(std::vector<int> lengths, std::vector<int> bad = {})
      : lengths_(std::move(lengths)), bad_(std::move(bad)) {}
  std::unique_ptr<SampleStream> Open(int worker, int, int64_t epoch) const override {
    opens.fetch_add(1);
    const int length = lengths_[static_cast<size_t>(std::max(0, worker))];
    if (length < 0) throw SampleError(FailureKind::kIo, "shard.bin", "cannot open");
    struct Stream : SampleStream {
      int64_t base;
      int length;
      const std::vector<int>* bad;
      int k = 0;
      bool Next(Sample& out, SampleContext&) override {
        if (k == length) return false;
        const int item = k++;
        if (std::count(bad->begin(), bad->end(), item)) {
          throw SampleError(FailureKind::kDecode, "", "bad item");
        }
        out.SetScalar<int64_t>("item", base + item);
        return true;
      }
    };
    auto stream = std::make_unique<Stream>();
    stream->base = epoch * 1000 + std::max(0, worker) * 100;
    stream->length = length;
    stream->bad = &bad_;
    return stream;
  }
  mutable std::atomic<int> opens{0};

 private:
  std::vector<int> lengths_;
  std::vector<int> bad_;
};

// The producer and what it works with, as Engine::Assemble wires them.
class Producer {
 public:
  Producer(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options)
      : options_(std::move(options)),
        stats_(options_.num_workers),
        failure_policy_(options_, nullptr),
        backend_(nullptr),
        scheduler_(options_, nullptr, nullptr, &backend_, &layout_,
                   std::max(2, options_.num_workers * options_.prefetch_factor), &stats_),
        filler_(options_, nullptr, &backend_, &layout_, &failure_policy_, &scheduler_, &stats_),
        producer_(options_, std::move(dataset), &layout_, &scheduler_, &filler_, &stats_) {
    if (options_.num_workers > 0) {
      workers_ = std::make_unique<ThreadWorkerPool>(
          &scheduler_.mu(), &scheduler_.wakeups(), options_.num_workers,
          [this](int worker, WorkerLane& lane) { producer_.RunWorker(worker, lane); });
      scheduler_.AttachWorkers(workers_.get());
    }
  }
  ~Producer() {
    {
      MutexLock lock(&scheduler_.mu());
      scheduler_.ShutdownLocked();
    }
    scheduler_.JoinRetiredWorkers();
  }

  std::optional<Batch> Next() {
    bool pending = false;
    return producer_.Next(std::nullopt, &pending);
  }
  // The "item" of each batch until the epoch ends.
  std::vector<std::vector<int64_t>> Epoch() {
    std::vector<std::vector<int64_t>> batches;
    while (std::optional<Batch> batch = Next()) {
      std::vector<int64_t> items;
      const Tensor& item = (*batch)["item"];
      for (int64_t r = 0; r < batch->size(); ++r) items.push_back(item.data<int64_t>()[r]);
      batches.push_back(items);
    }
    return batches;
  }
  IterableProducer& producer() { return producer_; }

 private:
  const LoaderOptions options_;
  SlotLayout layout_;
  StatsCollector stats_;
  FailurePolicy failure_policy_;
  ThreadLoadBackend backend_;
  Scheduler scheduler_;
  BatchFiller filler_;
  IterableProducer producer_;
  std::unique_ptr<ThreadWorkerPool> workers_;
};

LoaderOptions Options(int num_workers, int64_t batch_size, bool drop_last = false) {
  LoaderOptions options;
  options.num_workers = num_workers;
  options.batch_size = batch_size;
  options.drop_last = drop_last;
  return options;
}

using ProducedBatches = std::vector<std::vector<int64_t>>;

TEST(IterableProducerTest, WithoutWorkersTheCallerReadsTheOneStream) {
  auto streams = std::make_shared<SplitStreams>(std::vector<int>{7});
  Producer p(streams, Options(0, 3));
  EXPECT_EQ(p.Epoch(), (ProducedBatches{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(p.producer().active_workers(), 1);
  // The next call starts the next epoch, from a stream opened for it.
  EXPECT_EQ(p.Epoch(), (ProducedBatches{{1000, 1001, 1002}, {1003, 1004, 1005}, {1006}}));
  EXPECT_EQ(streams->opens.load(), 2);
}

TEST(IterableProducerTest, DropLastDropsAShortFinalBatch) {
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{7}), Options(0, 3, true));
  EXPECT_EQ(p.Epoch(), (ProducedBatches{{0, 1, 2}, {3, 4, 5}}));
}

TEST(IterableProducerTest, BatchesComeRoundRobinOverTheWorkers) {
  // Worker 0 has 6 items (3 batches), worker 1 has 3 (a batch and a half).
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{6, 3}), Options(2, 2));
  EXPECT_EQ(p.producer().active_workers(), 2);
  EXPECT_EQ(p.Epoch(), (ProducedBatches{{0, 1}, {100, 101}, {2, 3}, {102}, {4, 5}}));
  // Every epoch opens every worker's stream again.
  EXPECT_EQ(p.Epoch(), (ProducedBatches{{1000, 1001}, {1100, 1101}, {1002, 1003}, {1102}, {1004, 1005}}));
}

TEST(IterableProducerTest, SetActiveWorkersParksNoStreamWorker) {
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{2, 2}), Options(2, 2));
  p.producer().SetActiveWorkers(1);
  EXPECT_EQ(p.producer().active_workers(), 2);
  EXPECT_EQ(p.Epoch(), (ProducedBatches{{0, 1}, {100, 101}}));
}

TEST(IterableProducerTest, AFewSlotsStillServeEveryWorkersTurn) {
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{8, 8, 8}), Options(3, 2));
  p.producer().SetSlotLimit(1);  // raised to one per worker
  const ProducedBatches batches = p.Epoch();
  ASSERT_EQ(batches.size(), 12u);
  for (size_t b = 0; b < batches.size(); ++b) {
    EXPECT_EQ(batches[b][0] / 100, static_cast<int64_t>(b % 3)) << "batch " << b;
  }
}

TEST(IterableProducerTest, ResetAbandonsTheEpochAndTheNextStartsAfresh) {
  auto streams = std::make_shared<SplitStreams>(std::vector<int>{10});
  Producer p(streams, Options(0, 2));
  ASSERT_TRUE(p.Next().has_value());
  p.producer().Reset();
  const std::optional<Batch> first = p.Next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)["item"].data<int64_t>()[0], 1000) << "a new epoch, from its first item";
  EXPECT_EQ(streams->opens.load(), 2);
}

TEST(IterableProducerTest, ABadItemRaisesWithItsBatchUnderRaise) {
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{6}, std::vector<int>{3}),
             Options(0, 2));
  ASSERT_TRUE(p.Next().has_value());
  try {
    p.Next();
    FAIL() << "the batch of the bad item was delivered";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kDecode);
  }
}

TEST(IterableProducerTest, ABadItemIsDroppedUnderSkip) {
  LoaderOptions options = Options(0, 2);
  options.error_policy = ErrorPolicy::kSkip;
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{6}, std::vector<int>{3}), options);
  EXPECT_EQ(p.Epoch(), (ProducedBatches{{0, 1}, {2, 4}, {5}}));
}

TEST(IterableProducerTest, AStreamThatCannotOpenEndsTheEpochWithItsError) {
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{4, -1}), Options(2, 2));
  try {
    p.Epoch();
    FAIL() << "the epoch ended without the stream's error";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kIo);
    EXPECT_THAT(e.message(), HasSubstr("opening the stream of worker 1"));
    EXPECT_THAT(e.message(), HasSubstr("cannot open"));
  }
}

TEST(IterableProducerTest, AnEmptyStreamIsAnEmptyEpoch) {
  Producer p(std::make_shared<SplitStreams>(std::vector<int>{0, 0}), Options(2, 4));
  EXPECT_TRUE(p.Epoch().empty());
  EXPECT_TRUE(p.Epoch().empty());
}

}  // namespace
}  // namespace feedline::internal
