// Scheduler (src/loader/scheduler.h): which rows a worker claims, which
// worker owns which batch, in which order the consumer gets them and when a
// slot is added; the test plays the workers and the consumer one step at a
// time (engine_parts.h).
#include "src/loader/scheduler.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "feedline/batch.h"
#include "feedline/loader_options.h"
#include "loader/engine_parts.h"
#include "loader/test_datasets.h"

namespace feedline::testing {
namespace {

using internal::Slot;
using internal::Task;

LoaderOptions Options(int64_t batch_size, int num_workers, int prefetch_factor) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.num_workers = num_workers;
  options.prefetch_factor = prefetch_factor;
  return options;
}

// (batch, first row, end row) of a claim.
std::tuple<int64_t, int64_t, int64_t> TaskRows(const Task& task) {
  return {task.slot->batch_index, task.begin, task.end};
}

// The batch of a claim of up to `chunk` rows by `worker`, or nothing if it
// claims nothing.
std::optional<int64_t> ClaimedBatch(EngineParts& parts, int64_t chunk, int worker = -1) {
  std::optional<Task> task = parts.Claim(chunk, worker);
  if (!task) return std::nullopt;
  return task->slot->batch_index;
}

// Loads `task` and delivers its batch, which must be the next ready one
// (an empty handle if it is not).
Batch LoadAndDeliver(EngineParts& parts, const Task& task) {
  parts.Load(task);
  Slot* slot = parts.TakeReady();
  if (slot != task.slot) {
    ADD_FAILURE() << "batch " << task.slot->batch_index << " is not the next ready batch";
    return Batch();
  }
  std::optional<Batch> batch = parts.Deliver(slot);
  if (!batch) {
    ADD_FAILURE() << "batch " << task.slot->batch_index << " came out empty";
    return Batch();
  }
  return *std::move(batch);
}

TEST(Scheduler, ClaimsTheRowsOfEachBatchInPlanOrder) {
  // 10 samples in batches of 4: [0..4) [4..8) [8..10).
  EngineParts parts(std::make_shared<IndexDataset>(10), Options(4, 2, 2));
  parts.StartEpoch(0);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> claims;
  while (std::optional<Task> task = parts.Claim(3)) {
    claims.push_back(TaskRows(*task));
    for (int64_t row = task->begin; row < task->end; ++row) {
      EXPECT_EQ(task->slot->indices[static_cast<size_t>(row)], task->slot->batch_index * 4 + row);
    }
  }
  // A claim never reaches into the next batch: the last rows of one are a
  // short claim of their own.
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> expected = {
      {0, 0, 3}, {0, 3, 4}, {1, 0, 3}, {1, 3, 4}, {2, 0, 2}};
  EXPECT_EQ(claims, expected);
}

// 12 samples in batches of 4: claims the 3 batches whole and loads batch 2,
// then 1; returns the task of batch 0, still to load.
Task LoadBatches2And1(EngineParts& parts) {
  parts.StartEpoch(0);
  const Task t0 = *parts.Claim(4);
  const Task t1 = *parts.Claim(4);
  const Task t2 = *parts.Claim(4);
  parts.Load(t2);
  parts.Load(t1);
  return t0;
}

TEST(Scheduler, DeliversInPlanOrderWhateverOrderBatchesComplete) {
  EngineParts parts(std::make_shared<IndexDataset>(12), Options(4, 2, 2));
  const Task t0 = LoadBatches2And1(parts);
  EXPECT_EQ(parts.TakeReady(), nullptr);  // batch 0 is not ready
  parts.Load(t0);
  for (int64_t b = 0; b < 3; ++b) {
    Slot* slot = parts.TakeReady();
    ASSERT_NE(slot, nullptr);
    std::optional<Batch> batch = parts.Deliver(slot);
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->index(), b);
    EXPECT_EQ(Indices(*batch), (std::vector<int64_t>{4 * b, 4 * b + 1, 4 * b + 2, 4 * b + 3}));
  }
  EXPECT_EQ(parts.TakeReady(), nullptr);
}

TEST(Scheduler, OutOfOrderDeliversTheLowestReadyBatch) {
  LoaderOptions options = Options(4, 2, 2);
  options.in_order = false;
  EngineParts parts(std::make_shared<IndexDataset>(12), options);
  const Task t0 = LoadBatches2And1(parts);
  Slot* first = parts.TakeReady();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->batch_index, 1);
  parts.Load(t0);
  Slot* second = parts.TakeReady();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->batch_index, 0);
}

TEST(Scheduler, BatchPerWorkerGivesBatchBWholeToWorkerBModN) {
  // 10 batches of 2 among 3 workers, each allowed 2 undelivered batches.
  LoaderOptions options = Options(2, 3, 2);
  options.batch_per_worker = true;
  EngineParts parts(std::make_shared<IndexDataset>(20), options);
  parts.StartEpoch(0);
  std::vector<Task> first_round;
  for (int round = 0; round < 2; ++round) {
    for (int worker = 0; worker < 3; ++worker) {
      std::optional<Task> task = parts.Claim(/*chunk=*/1, worker);
      ASSERT_TRUE(task.has_value()) << "worker " << worker << ", round " << round;
      EXPECT_EQ(task->slot->batch_index, worker + 3 * round);
      EXPECT_EQ(task->begin, 0);  // whole, whatever the chunk asked
      EXPECT_EQ(task->end, 2);
      if (round == 0) first_round.push_back(*task);
    }
  }
  // Each worker holds prefetch_factor undelivered batches: no more claims.
  for (int worker = 0; worker < 3; ++worker) {
    EXPECT_EQ(ClaimedBatch(parts, 1, worker), std::nullopt) << worker;
  }
  // Delivering batch 0 gives worker 0 (and only it) its next batch, 6.
  LoadAndDeliver(parts, first_round[0]);
  EXPECT_EQ(ClaimedBatch(parts, 1, 1), std::nullopt);
  EXPECT_EQ(ClaimedBatch(parts, 1, 2), std::nullopt);
  EXPECT_EQ(ClaimedBatch(parts, 1, 0), 6);
}

TEST(Scheduler, GrowsWhenTheCallerHoldsEverySlot) {
  // 1 worker, prefetch 2: 2 slots.
  EngineParts parts(std::make_shared<IndexDataset>(10), Options(2, 1, 2));
  parts.StartEpoch(0);
  std::vector<Batch> kept;
  kept.push_back(LoadAndDeliver(parts, *parts.Claim(2)));
  const Task filling = *parts.Claim(2);
  // One slot held, one filling: the filling one comes back, nothing is added.
  parts.GrowIfCallerHoldsEverySlot();
  EXPECT_FALSE(parts.HasFreeSlot());
  EXPECT_EQ(ClaimedBatch(parts, 2), std::nullopt);
  kept.push_back(LoadAndDeliver(parts, filling));
  // Both held (list(loader)): nothing could load without another slot.
  EXPECT_EQ(ClaimedBatch(parts, 2), std::nullopt);
  parts.GrowIfCallerHoldsEverySlot();
  EXPECT_TRUE(parts.HasFreeSlot());
  EXPECT_EQ(ClaimedBatch(parts, 2), 2);
}

TEST(Scheduler, BatchPerWorkerGrowsForTheAwaitedBatchsOwner) {
  // 2 workers, 2 slots; worker 1 takes both for its batches 1 and 3 before
  // worker 0 claims batch 0, which the consumer awaits.
  LoaderOptions options = Options(2, 2, 2);
  options.batch_per_worker = true;
  EngineParts parts(std::make_shared<IndexDataset>(12), options);
  parts.SetSlotLimit(2);
  parts.StartEpoch(0);
  EXPECT_EQ(ClaimedBatch(parts, 1, 1), 1);
  EXPECT_EQ(ClaimedBatch(parts, 1, 1), 3);
  EXPECT_EQ(ClaimedBatch(parts, 1, 0), std::nullopt);
  parts.GrowIfCallerHoldsEverySlot();
  EXPECT_EQ(ClaimedBatch(parts, 1, 0), 0);
}

TEST(Scheduler, AnAbandonedEpochsBatchIsNeverReadyAndTheNextEpochStartsAtBatch0) {
  EngineParts parts(std::make_shared<IndexDataset>(8), Options(4, 1, 2));
  parts.StartEpoch(0);
  const Task stale = *parts.Claim(4);
  parts.AbandonEpoch();
  parts.Load(stale);  // a worker finishing rows of the abandoned epoch
  EXPECT_EQ(parts.TakeReady(), nullptr);
  parts.StartEpoch(1);
  const Task task = *parts.Claim(4);
  EXPECT_EQ(TaskRows(task), std::make_tuple(int64_t{0}, int64_t{0}, int64_t{4}));
  const Batch batch = LoadAndDeliver(parts, task);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch.epoch(), 1);
  EXPECT_EQ(Indices(batch), (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace feedline::testing
