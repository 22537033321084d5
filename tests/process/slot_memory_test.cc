// How many batch slots worker processes get. Their slots are shared memory
// that every worker maps, one batch each, for as long as the loader lives:
// a loop that waits for its batches (the loader is the bottleneck) keeps
// two, one that finds its batches ready gets the prefetch it allows
// (max(2, num_workers * prefetch_factor) slots) and gives them back once
// it waits again, and a loop that keeps every batch still gets them all.
// StatsSnapshot::slots and slot_bytes say what exists.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

constexpr int64_t kMemoryBatch = 64;

// Sample i: "index" = i and 256 floats, after sleeping `row_us` (a row that
// takes a while, as a decoded image does).
class SlowDataset : public Dataset {
 public:
  SlowDataset(int64_t n, int row_us) : n_(n), row_us_(row_us) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    CheckIndex(index, n_);
    std::this_thread::sleep_for(std::chrono::microseconds(row_us_));
    out.SetScalar<int64_t>("index", index);
    Tensor values = out.Allocate("values", DType::kF32, Shape{256});
    for (int k = 0; k < 256; ++k) values.data<float>()[k] = static_cast<float>(index + k);
  }
  std::vector<FieldSpec> FixedFields() const override {
    return {{"index", DType::kI64, Shape{}}, {"values", DType::kF32, Shape{256}}};
  }

 private:
  int64_t n_;
  int row_us_;
};

// The last row of each batch sleeps 20 ms, the others 100 us: a worker
// that runs out of rows would sit out most of each batch's end.
class SlowLastRowDataset : public Dataset {
 public:
  explicit SlowLastRowDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    CheckIndex(index, n_);
    const bool last = index % kMemoryBatch == kMemoryBatch - 1;
    std::this_thread::sleep_for(std::chrono::microseconds(last ? 20000 : 100));
    out.SetScalar<int64_t>("index", index);
  }
  std::vector<FieldSpec> FixedFields() const override { return {{"index", DType::kI64, Shape{}}}; }

 private:
  int64_t n_;
};

LoaderOptions MemoryProcessOptions() {
  LoaderOptions options;
  options.worker_mode = WorkerMode::kProcess;
  options.num_workers = 2;
  options.prefetch_factor = 2;  // up to 4 slots
  options.batch_size = kMemoryBatch;
  return options;
}

void ExpectInOrder(const Batch& batch, int64_t batch_index) {
  ASSERT_EQ(batch.size(), kMemoryBatch);
  const int64_t* index = batch["index"].data<int64_t>();
  for (int64_t r = 0; r < kMemoryBatch; ++r) ASSERT_EQ(index[r], batch_index * kMemoryBatch + r);
}

TEST(SlotMemory, ALoopThatWaitsForItsBatchesKeepsTwoSlots) {
  // 2 ms rows: a batch takes ~64 ms with 2 workers, and the loop takes none.
  // The loop holds its batch until the next one arrives, as Python's for
  // loop does (range-for releases it first, which would need no third slot).
  DataLoader loader(std::make_shared<SlowDataset>(8 * kMemoryBatch, 2000), MemoryProcessOptions());
  int64_t batches = 0;
  std::optional<Batch> held;
  while (std::optional<Batch> next = loader.Next()) {
    held = std::move(next);
    ExpectInOrder(*held, batches++);
  }
  EXPECT_EQ(batches, 8);
  const StatsSnapshot stats = loader.stats();
  EXPECT_EQ(stats.slots, 2);
  EXPECT_GE(stats.slot_bytes, 2 * kMemoryBatch * (8 + 256 * 4));
}

TEST(SlotMemory, BatchesWithALongTailKeepTheSlotForIt) {
  // Measured from the third batch on (the time from a batch's last claim to
  // its completion against the time between completions), the tail is far
  // over 3% of a batch: the third slot is made, as for threads.
  DataLoader loader(std::make_shared<SlowLastRowDataset>(12 * kMemoryBatch), MemoryProcessOptions());
  int64_t batches = 0;
  std::optional<Batch> held;
  while (std::optional<Batch> next = loader.Next()) {
    held = std::move(next);
    ExpectInOrder(*held, batches++);
  }
  EXPECT_EQ(batches, 12);
  EXPECT_GE(loader.stats().slots, 3);
}

TEST(SlotMemory, ALoopSlowerThanTheLoaderGetsItsPrefetch) {
  // 100 us rows (~4 ms a batch) against a 60 ms step.
  DataLoader loader(std::make_shared<SlowDataset>(10 * kMemoryBatch, 100), MemoryProcessOptions());
  int64_t batches = 0;
  for (const Batch& batch : loader) {
    ExpectInOrder(batch, batches++);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  EXPECT_EQ(batches, 10);
  EXPECT_EQ(loader.stats().slots, 4);
}

TEST(SlotMemory, SlotsMadeWhileTheLoopWasBusyAreGivenBackOnceItWaitsAgain) {
  // 1 ms rows (~32 ms a batch): 4 slow steps fill the prefetch, then the
  // loop waits for 14 batches in a row, holding each until the next arrives.
  DataLoader loader(std::make_shared<SlowDataset>(18 * kMemoryBatch, 1000), MemoryProcessOptions());
  int64_t batches = 0;
  int most_slots = 0;
  std::optional<Batch> held;
  while (std::optional<Batch> next = loader.Next()) {
    held = std::move(next);
    ExpectInOrder(*held, batches++);
    most_slots = std::max(most_slots, loader.stats().slots);
    if (batches <= 4) std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  EXPECT_EQ(batches, 18);
  EXPECT_EQ(most_slots, 4);
  EXPECT_EQ(loader.stats().slots, 2);
}

TEST(SlotMemory, APollingLoopThatWentAwayGetsItsPrefetch) {
  // A loop that found no batch ready and went on with other work (TryNext
  // returned kPending) is not waiting: while it is away the workers fill
  // the prefetch it allows. 1 ms rows (~32 ms a batch); every wait is a
  // TryNext with a limit, so a stall fails the checks instead of hanging.
  DataLoader loader(std::make_shared<SlowDataset>(8 * kMemoryBatch, 1000), MemoryProcessOptions());
  Batch first;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (loader.TryNext(std::chrono::milliseconds(0), &first) == NextStatus::kPending) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "no first batch in 20 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ExpectInOrder(first, 0);
  // Batch 1 is loading: this poll finds nothing, and the loop goes away for
  // 600 ms keeping batch 0 (~6x what batches 1-3 take).
  Batch next;
  ASSERT_EQ(loader.TryNext(std::chrono::milliseconds(0), &next), NextStatus::kPending);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  for (int64_t b = 1; b <= 3; ++b) {
    Batch batch;
    ASSERT_EQ(loader.TryNext(std::chrono::milliseconds(0), &batch), NextStatus::kBatch)
        << "batch " << b << " was not loaded while the loop was away";
    ExpectInOrder(batch, b);
  }
  EXPECT_EQ(loader.stats().slots, 4);
}

TEST(SlotMemory, ALoopThatKeepsEveryBatchGetsThemAll) {
  // As list(loader) does: no batch is released, so every one needs a slot
  // of its own, made while the loop waits.
  DataLoader loader(std::make_shared<SlowDataset>(6 * kMemoryBatch, 1000), MemoryProcessOptions());
  std::vector<Batch> kept;
  while (std::optional<Batch> batch = loader.Next()) kept.push_back(std::move(*batch));
  ASSERT_EQ(kept.size(), 6u);
  for (size_t b = 0; b < kept.size(); ++b) ExpectInOrder(kept[b], static_cast<int64_t>(b));
  EXPECT_GE(loader.stats().slots, 6);
}

}  // namespace
}  // namespace feedline
