// RowClaims (src/loader/row_claims.h): which rows a worker loads next, which
// slot a batch is bound to, and when a slot is added. The claims are built
// from their parts as the Scheduler wires them (an EpochCursor with a plan, a
// WorkerRoster, a SlotPool of heap slots, the generation counter); the test
// plays the workers, the consumer and the Scheduler one step at a time,
// holding the scheduler's lock for each call, as the Scheduler does.
#include "src/loader/row_claims.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/loader_options.h"
#include "src/core/mutex.h"
#include "src/loader/claim_policy.h"
#include "src/loader/epoch_cursor.h"
#include "src/loader/scheduler_lock.h"
#include "src/loader/slot.h"
#include "src/loader/slot_allocator.h"
#include "src/loader/slot_layout.h"
#include "src/loader/slot_pool.h"
#include "src/loader/worker_pool.h"
#include "src/loader/worker_roster.h"

namespace feedline::internal {
namespace {

// The same batches every epoch, as listed (uneven and empty ones too).
class ListedBatches : public BatchSampler {
 public:
  explicit ListedBatches(std::vector<std::vector<int64_t>> batches)
      : batches_(std::move(batches)) {}
  int64_t size() const override { return static_cast<int64_t>(batches_.size()); }
  EpochPlan Plan(int64_t) const override {
    EpochPlan plan;
    for (const std::vector<int64_t>& batch : batches_) plan.Add(batch);
    return plan;
  }

 private:
  std::vector<std::vector<int64_t>> batches_;
};

// `count` batches of `rows` rows: batch b holds indices b * rows ...
std::vector<std::vector<int64_t>> EvenBatches(int count, int rows) {
  std::vector<std::vector<int64_t>> batches(static_cast<size_t>(count));
  for (int b = 0; b < count; ++b) {
    for (int r = 0; r < rows; ++r) batches[static_cast<size_t>(b)].push_back(b * rows + r);
  }
  return batches;
}

LoaderOptions Options(int num_workers, int prefetch_factor, bool batch_per_worker = false) {
  LoaderOptions options;
  options.num_workers = num_workers;
  options.prefetch_factor = prefetch_factor;
  options.batch_per_worker = batch_per_worker;
  return options;
}

// (batch, first row, end row) of a claim.
using Rows = std::tuple<int64_t, int64_t, int64_t>;
Rows RowsOf(const Task& task) { return {task.slot->batch_index, task.begin, task.end}; }

// RowClaims and the parts it reads, wired as the Scheduler wires them. Each
// call holds the scheduler's lock, as the Scheduler does.
class Claims {
 public:
  Claims(LoaderOptions options, std::vector<std::vector<int64_t>> batches, int slot_limit,
         bool round_trip_claims = false)
      : options_(std::move(options)),
        planner_(std::make_shared<ListedBatches>(std::move(batches)), nullptr),
        cursor_(nullptr),
        pool_(slot_limit, std::make_shared<HeapSlotAllocator>(), lock_),
        roster_(options_.num_workers, !claim_policy::BatchPerWorker(options_, true),
                &lock_->wakeups),
        claims_(options_, /*map_style=*/true, round_trip_claims, /*hold_back=*/false, &pool_,
                &lock_->wakeups, &cursor_, &roster_, &layout_, &generation_) {
    lock_->wakeups.SetWorkerCount(roster_.num_workers());
  }

  // As Scheduler::StartEpochLocked: plans `epoch` and binds from `first_batch`.
  void StartEpoch(int64_t epoch, int64_t first_batch = 0) {
    PlannedEpoch planned = planner_.Plan(epoch);
    MutexLock lock(&lock_->mu);
    cursor_.Start(std::move(planned), first_batch);
    claims_.Start(first_batch);
    generation_.fetch_add(1);
  }
  // As Scheduler::AbandonEpochLocked does to the claims.
  void AbandonEpoch() {
    MutexLock lock(&lock_->mu);
    cursor_.End();
    claims_.DropUnclaimed();
    generation_.fetch_add(1);
  }

  // As a worker (`worker`, or -1: the consumer): up to `chunk` rows, or
  // nothing if there is nothing to claim.
  std::optional<Task> Claim(int64_t chunk, int worker = -1) {
    MutexLock lock(&lock_->mu);
    Task task;
    if (!claims_.Claim(chunk, &task, worker)) return std::nullopt;
    return task;
  }
  // The claims of up to `chunk` rows until there is nothing to claim.
  std::vector<Rows> ClaimAll(int64_t chunk, int worker = -1) {
    std::vector<Rows> claimed;
    while (std::optional<Task> task = Claim(chunk, worker)) claimed.push_back(RowsOf(*task));
    return claimed;
  }
  bool HasWork(int worker = -1) {
    MutexLock lock(&lock_->mu);
    return claims_.HasWork(worker);
  }
  bool WorthWakingAnother(int worker = -1) {
    MutexLock lock(&lock_->mu);
    return claims_.WorthWakingAnother(worker);
  }
  void NoteRowCost(double ns_per_row, int64_t rows) {
    claims_.NoteRowCost(ns_per_row, rows);
  }
  double row_ns() const { return claims_.row_ns(); }

  // As the filling worker: `rows` of the slot's claimed rows were loaded.
  static void Finish(Slot* slot, int64_t rows) { slot->finished.fetch_add(rows); }
  // A slot goes back to the pool: its batch was dropped, or delivered and
  // released by the last Batch handle.
  void PutBack(Slot* slot) {
    MutexLock lock(&lock_->mu);
    pool_.PutLocked(slot);
  }
  // As the consumer, via Scheduler::DeliverLocked: `slot` is handed out and
  // held.
  void Deliver(Slot* slot) {
    MutexLock lock(&lock_->mu);
    pool_.MarkDeliveredLocked(slot);
    claims_.NoteDelivered(slot);
  }
  void GrowIfCallerHoldsEverySlot() {
    MutexLock lock(&lock_->mu);
    claims_.GrowIfCallerHoldsEverySlot();
  }
  // As the worker pool after a load ran past the timeout: the old slot is
  // marked orphaned, then its batch bound again.
  void Rebind(Slot* slot, int64_t row, int attempt = 0) {
    MutexLock lock(&lock_->mu);
    slot->orphaned.store(true);
    claims_.Rebind(LateLoad{slot, row, attempt});
  }
  // As Scheduler::Complete for an orphaned slot whose late load returned.
  void ReturnOrphan(Slot* slot) {
    MutexLock lock(&lock_->mu);
    claims_.ReleaseOrphan(slot);
    pool_.PutLocked(slot);
  }

  int LendWaitingWorker() {
    MutexLock lock(&lock_->mu);
    return claims_.LendWaitingWorker();
  }
  void ReturnWorker(int worker) {
    MutexLock lock(&lock_->mu);
    claims_.ReturnWorker(worker);
  }
  void SetWaiting(int worker, bool waiting) {
    MutexLock lock(&lock_->mu);
    roster_.SetWaiting(worker, waiting);
  }
  bool lent(int worker) {
    MutexLock lock(&lock_->mu);
    return roster_.lent(worker);
  }
  void SetActiveWorkers(int n) {
    MutexLock lock(&lock_->mu);
    roster_.SetActive(n);
  }
  // As worker `worker` waiting for work: counts itself waiting, waits on
  // its condition variable until `*go` is set (or `until`), and returns the
  // seconds it waited.
  double WaitAsWorker(int worker, const bool* go, std::chrono::steady_clock::time_point until) {
    MutexLock lock(&lock_->mu);
    const auto start = std::chrono::steady_clock::now();
    roster_.SetWaiting(worker, true);
    while (!*go && std::chrono::steady_clock::now() < until) {
      lock_->wakeups.Wait(lock_->mu, worker, until);
    }
    roster_.SetWaiting(worker, false);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Waits (dropping the lock between looks) until a worker waits, then sets
  // `*go` and gives back the id of `lent_worker` in the same critical
  // section.
  void ReturnWorkerOnceOneWaits(int lent_worker, bool* go) {
    MutexLock lock(&lock_->mu);
    while (!lock_->wakeups.AnyWaiting()) {
      MutexUnlock unlock(&lock_->mu);
      std::this_thread::yield();
    }
    *go = true;
    claims_.ReturnWorker(lent_worker);
  }

  void SetSlotLimit(int n) {
    MutexLock lock(&lock_->mu);
    pool_.SetLimitLocked(n);
  }
  int SlotsCreated() {
    MutexLock lock(&lock_->mu);
    return pool_.size_locked();
  }
  int SlotsInUse() {
    MutexLock lock(&lock_->mu);
    return pool_.in_use_locked();
  }
  int Grown() {
    MutexLock lock(&lock_->mu);
    return pool_.grown_locked();
  }
  bool HasFreeSlot() {
    MutexLock lock(&lock_->mu);
    return pool_.HasFreeLocked();
  }
  bool batch_release_wakes() { return lock_->wakeups.batch_release_wakes(); }
  uint64_t generation() const { return generation_.load(); }

 private:
  const LoaderOptions options_;  // referenced by the claims
  const EpochPlanner planner_;
  EpochCursor cursor_;
  SlotLayout layout_;
  std::atomic<uint64_t> generation_{0};
  const std::shared_ptr<SchedulerLock> lock_ = std::make_shared<SchedulerLock>();
  SlotPool pool_;
  WorkerRoster roster_;  // waits on the lock's wake-ups
  RowClaims claims_;
};

// --- Binding and claiming in plan order ----------------------------------

TEST(RowClaims, BindsBatchesInPlanOrderAndClaimsChunksThatNeverCrossABatch) {
  Claims claims(Options(2, 2), {{10, 11, 12, 13}, {14, 15, 16, 17}, {18, 19}}, 4);
  claims.StartEpoch(5);
  std::vector<Task> tasks;
  while (std::optional<Task> task = claims.Claim(3)) tasks.push_back(*task);
  std::vector<Rows> claimed;
  for (const Task& task : tasks) claimed.push_back(RowsOf(task));
  // The last rows of a batch are a short claim of their own.
  const std::vector<Rows> expected = {{0, 0, 3}, {0, 3, 4}, {1, 0, 3}, {1, 3, 4}, {2, 0, 2}};
  EXPECT_EQ(claimed, expected);
  ASSERT_EQ(tasks.size(), 5u);
  // One slot per batch, bound to the batch's rows in this epoch's run.
  EXPECT_EQ(tasks[0].slot, tasks[1].slot);
  EXPECT_EQ(tasks[2].slot, tasks[3].slot);
  EXPECT_NE(tasks[0].slot, tasks[2].slot);
  EXPECT_NE(tasks[2].slot, tasks[4].slot);
  EXPECT_EQ(claims.SlotsCreated(), 3);
  const std::vector<std::vector<int64_t>> indices = {{10, 11, 12, 13}, {14, 15, 16, 17}, {18, 19}};
  for (size_t t : {size_t{0}, size_t{2}, size_t{4}}) {
    const Slot* slot = tasks[t].slot;
    const std::vector<int64_t>& want = indices[static_cast<size_t>(slot->batch_index)];
    EXPECT_EQ(slot->planned_rows, static_cast<int64_t>(want.size()));
    EXPECT_EQ(
        std::vector<int64_t>(slot->indices.begin(), slot->indices.begin() + slot->planned_rows),
        want);
    EXPECT_EQ(slot->claimed, slot->planned_rows);
    EXPECT_EQ(slot->epoch, 5);
    EXPECT_EQ(slot->state, SlotState::kFilling);
    EXPECT_EQ(slot->generation, claims.generation());
    EXPECT_EQ(tasks[t].generation, claims.generation());
  }
}

TEST(RowClaims, AnEpochStartedAtALaterBatchBindsFromThere) {
  Claims claims(Options(2, 2), EvenBatches(4, 2), 4);
  claims.StartEpoch(0, /*first_batch=*/2);
  const std::vector<Rows> expected = {{2, 0, 2}, {3, 0, 2}};
  EXPECT_EQ(claims.ClaimAll(8), expected);
}

TEST(RowClaims, AnEmptyBatchIsClaimedAtOnceAndTheNextClaimTakesTheNextBatch) {
  // A custom batch sampler may yield an empty batch.
  Claims claims(Options(2, 2), {{0, 1}, {}, {2}}, 4);
  claims.StartEpoch(0);
  const std::vector<Rows> expected = {{0, 0, 2}, {1, 0, 0}, {2, 0, 1}};
  EXPECT_EQ(claims.ClaimAll(8), expected);
}

TEST(RowClaims, ClaimReturnsFalseAtTheEndOfTheEpochWhateverSlotsAreFree) {
  Claims claims(Options(2, 2), EvenBatches(3, 4), 4);
  EXPECT_FALSE(claims.HasWork());  // no epoch runs yet
  EXPECT_FALSE(claims.Claim(4).has_value());
  claims.StartEpoch(0);
  EXPECT_TRUE(claims.HasWork());
  std::vector<Slot*> slots;
  while (std::optional<Task> task = claims.Claim(4)) slots.push_back(task->slot);
  EXPECT_EQ(slots.size(), 3u);
  EXPECT_TRUE(claims.HasFreeSlot());  // a fourth slot could be made: no batch is left for it
  EXPECT_FALSE(claims.HasWork());
  EXPECT_FALSE(claims.Claim(4).has_value());
  for (Slot* slot : slots) claims.PutBack(slot);
  EXPECT_FALSE(claims.HasWork());
  EXPECT_FALSE(claims.Claim(4).has_value());
  EXPECT_EQ(claims.SlotsCreated(), 3);
}

TEST(RowClaims, AFreeSlotIsReusedBeforeANewOneIsMadeUpToTheLimit) {
  Claims claims(Options(2, 2), EvenBatches(4, 2), /*slot_limit=*/2);
  claims.StartEpoch(0);
  std::optional<Task> b0 = claims.Claim(2);
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(b0->slot->batch_index, 0);
  EXPECT_EQ(claims.SlotsCreated(), 1);
  claims.PutBack(b0->slot);

  std::optional<Task> b1 = claims.Claim(2);
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->slot->batch_index, 1);
  EXPECT_EQ(b1->slot, b0->slot);  // the free one, not a new one
  EXPECT_EQ(claims.SlotsCreated(), 1);

  std::optional<Task> b2 = claims.Claim(2);
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(b2->slot->batch_index, 2);
  EXPECT_NE(b2->slot, b1->slot);
  EXPECT_EQ(claims.SlotsCreated(), 2);

  // Both slots in use and the limit is 2: batch 3 waits for one.
  EXPECT_FALSE(claims.HasWork());
  EXPECT_FALSE(claims.Claim(2).has_value());
  EXPECT_EQ(claims.SlotsCreated(), 2);

  claims.PutBack(b1->slot);
  EXPECT_TRUE(claims.HasWork());
  std::optional<Task> b3 = claims.Claim(2);
  ASSERT_TRUE(b3.has_value());
  EXPECT_EQ(b3->slot->batch_index, 3);
  EXPECT_EQ(b3->slot, b1->slot);
  EXPECT_EQ(claims.SlotsCreated(), 2);
}

TEST(RowClaims, TheOpenBatchsRowsAreWorkWithoutAFreeSlot) {
  Claims claims(Options(2, 2), EvenBatches(2, 4), /*slot_limit=*/1);
  claims.StartEpoch(0);
  ASSERT_TRUE(claims.Claim(1).has_value());
  EXPECT_FALSE(claims.HasFreeSlot());
  EXPECT_TRUE(claims.HasWork());
  const std::vector<Rows> expected = {{0, 1, 3}, {0, 3, 4}};
  EXPECT_EQ(claims.ClaimAll(2), expected);  // then batch 1 waits for the slot
  EXPECT_FALSE(claims.HasWork());
}

TEST(RowClaims, AParkedWorkerHasNoWork) {
  Claims claims(Options(3, 2), EvenBatches(2, 4), 4);
  claims.StartEpoch(0);
  claims.SetActiveWorkers(2);
  EXPECT_TRUE(claims.HasWork(0));
  EXPECT_TRUE(claims.HasWork(1));
  EXPECT_FALSE(claims.HasWork(2));
  EXPECT_TRUE(claims.HasWork(-1));  // the consumer
}

// --- Abandoning an epoch --------------------------------------------------

TEST(RowClaims, DropUnclaimedAfterAbandoningLeavesNothingClaimable) {
  Claims claims(Options(2, 2), EvenBatches(3, 4), 4);
  claims.StartEpoch(0);
  std::optional<Task> task = claims.Claim(2);  // rows 0..2 of batch 0 are loading
  ASSERT_TRUE(task.has_value());
  Slot* slot = task->slot;
  claims.AbandonEpoch();
  EXPECT_FALSE(claims.HasWork());
  // Rows 2..4 count as finished; the slot waits for the two loading.
  EXPECT_EQ(slot->claimed, 4);
  EXPECT_EQ(slot->finished.load(), 2);
  EXPECT_EQ(slot->state, SlotState::kFilling);
  EXPECT_EQ(claims.SlotsInUse(), 1);

  // The next epoch binds from its first batch again, in a new slot.
  claims.StartEpoch(1);
  std::optional<Task> next = claims.Claim(4);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(RowsOf(*next), Rows(0, 0, 4));
  EXPECT_EQ(next->slot->epoch, 1);
  EXPECT_NE(next->slot, slot);
}

TEST(RowClaims, DropUnclaimedReturnsASlotWithNothingLoadingToThePool) {
  Claims claims(Options(2, 2), EvenBatches(3, 4), 4);
  claims.StartEpoch(0);
  std::optional<Task> task = claims.Claim(1);
  ASSERT_TRUE(task.has_value());
  Claims::Finish(task->slot, 1);  // its one claimed row loaded
  claims.AbandonEpoch();
  EXPECT_EQ(task->slot->finished.load(), 4);
  EXPECT_EQ(task->slot->state, SlotState::kFree);
  EXPECT_EQ(claims.SlotsInUse(), 0);
  EXPECT_FALSE(claims.HasWork());
}

TEST(RowClaims, ClaimDoesNotAskWhetherTheEpochRunsItsCallersAskHasWorkFirst) {
  // What the code does: after an abandon, HasWork is false (every caller,
  // Engine::LoadTasks and LendWaitingWorker, asks it under the same lock
  // before claiming), but Claim itself would bind the abandoned plan's next
  // batch; only the open batch's dropped rows stay unclaimable.
  Claims claims(Options(2, 2), EvenBatches(3, 4), 4);
  claims.StartEpoch(0);
  ASSERT_TRUE(claims.Claim(2).has_value());
  claims.AbandonEpoch();
  EXPECT_FALSE(claims.HasWork());
  std::optional<Task> task = claims.Claim(4);
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(RowsOf(*task), Rows(1, 0, 4));
  EXPECT_EQ(task->slot->generation, claims.generation());  // the one after the abandon
}

// --- Batches owned by workers (LoaderOptions::batch_per_worker) ------------

TEST(RowClaims, BatchPerWorkerClaimsWorkerWsBatchesWholeAtMostPrefetchFactorUndelivered) {
  // 2 workers, prefetch_factor 2, 6 batches of 2 rows.
  Claims claims(Options(2, 2, /*batch_per_worker=*/true), EvenBatches(6, 2), 8);
  claims.StartEpoch(0);
  std::optional<Task> b0 = claims.Claim(1, 0);  // whole, whatever the chunk
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(RowsOf(*b0), Rows(0, 0, 2));
  EXPECT_EQ(b0->slot->producer, 0);
  std::optional<Task> b2 = claims.Claim(1, 0);
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(RowsOf(*b2), Rows(2, 0, 2));
  // Two undelivered: worker 0 has nothing more, though slots are free.
  EXPECT_TRUE(claims.HasFreeSlot());
  EXPECT_FALSE(claims.HasWork(0));
  EXPECT_FALSE(claims.Claim(1, 0).has_value());

  std::optional<Task> b1 = claims.Claim(1, 1);
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(RowsOf(*b1), Rows(1, 0, 2));
  EXPECT_EQ(b1->slot->producer, 1);
  std::optional<Task> b3 = claims.Claim(1, 1);
  ASSERT_TRUE(b3.has_value());
  EXPECT_EQ(RowsOf(*b3), Rows(3, 0, 2));
  EXPECT_FALSE(claims.HasWork(1));
  EXPECT_FALSE(claims.Claim(1, 1).has_value());
  // Each worker's batches are its own: none is worth waking another for.
  EXPECT_FALSE(claims.WorthWakingAnother(0));

  // Delivering batch 0 gives worker 0 its quota back, not worker 1.
  claims.Deliver(b0->slot);
  EXPECT_EQ(b0->slot->producer, -1);
  EXPECT_TRUE(claims.HasWork(0));
  EXPECT_FALSE(claims.HasWork(1));
  std::optional<Task> b4 = claims.Claim(1, 0);
  ASSERT_TRUE(b4.has_value());
  EXPECT_EQ(RowsOf(*b4), Rows(4, 0, 2));

  claims.Deliver(b1->slot);
  std::optional<Task> b5 = claims.Claim(1, 1);
  ASSERT_TRUE(b5.has_value());
  EXPECT_EQ(RowsOf(*b5), Rows(5, 0, 2));

  // Worker 0's next would be batch 6, past the end.
  claims.Deliver(b2->slot);
  EXPECT_FALSE(claims.HasWork(0));
  EXPECT_FALSE(claims.Claim(1, 0).has_value());
}

TEST(RowClaims, BatchPerWorkerWaitsForAFreeSlot) {
  Claims claims(Options(2, 2, /*batch_per_worker=*/true), EvenBatches(4, 2), /*slot_limit=*/1);
  claims.StartEpoch(0);
  std::optional<Task> b0 = claims.Claim(2, 0);
  ASSERT_TRUE(b0.has_value());
  EXPECT_FALSE(claims.HasWork(1));  // within its quota, but no slot
  EXPECT_FALSE(claims.Claim(2, 1).has_value());
  claims.Deliver(b0->slot);
  claims.PutBack(b0->slot);  // the consumer released it
  EXPECT_TRUE(claims.HasWork(1));
  std::optional<Task> b1 = claims.Claim(2, 1);
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(RowsOf(*b1), Rows(1, 0, 2));
  EXPECT_EQ(b1->slot, b0->slot);
}

TEST(RowClaims, BatchPerWorkerGrowsForTheAwaitedBatchsOwner) {
  // Worker 1 took both slots for batches 1 and 3; batch 0, which the
  // consumer awaits, has no slot and none is free.
  Claims claims(Options(2, 2, /*batch_per_worker=*/true), EvenBatches(4, 2), /*slot_limit=*/2);
  claims.StartEpoch(0);
  ASSERT_TRUE(claims.Claim(2, 1).has_value());
  ASSERT_TRUE(claims.Claim(2, 1).has_value());
  EXPECT_FALSE(claims.HasWork(0));
  claims.GrowIfCallerHoldsEverySlot();  // the caller holds none of them
  EXPECT_EQ(claims.Grown(), 1);
  std::optional<Task> b0 = claims.Claim(2, 0);
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(RowsOf(*b0), Rows(0, 0, 2));
  // Batch 0 is bound now: no more.
  claims.GrowIfCallerHoldsEverySlot();
  EXPECT_EQ(claims.Grown(), 1);
}

// --- Rebinding after a timeout -------------------------------------------

TEST(RowClaims, RebindMakesTheBatchsRowsClaimableAgainBeforeTheOpenBatchs) {
  Claims claims(Options(2, 2), EvenBatches(3, 4), /*slot_limit=*/3);
  claims.StartEpoch(0);
  std::optional<Task> b0 = claims.Claim(4);  // batch 0 whole, in slot A
  std::optional<Task> b1 = claims.Claim(2);  // rows 0..2 of batch 1, the open batch
  ASSERT_TRUE(b0.has_value() && b1.has_value());
  Slot* old_slot = b0->slot;

  claims.Rebind(old_slot, /*row=*/3);  // row 3's load ran past the timeout
  std::optional<Task> again = claims.Claim(2);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(RowsOf(*again), Rows(0, 0, 2));
  Slot* fresh = again->slot;
  EXPECT_NE(fresh, old_slot);
  EXPECT_NE(fresh, b1->slot);
  EXPECT_EQ(claims.Grown(), 0);  // the third slot was free
  EXPECT_EQ(std::vector<int64_t>(fresh->indices.begin(), fresh->indices.begin() + 4),
            (std::vector<int64_t>{0, 1, 2, 3}));
  // The late row starts as failed in the new slot (1 + the attempt that was late).
  EXPECT_EQ(std::vector<int>(fresh->timed_out.begin(), fresh->timed_out.begin() + 4),
            (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(fresh->generation, old_slot->generation);

  // The rest of batch 0 first, then the open batch's rows, then batch 2,
  // which waits for a slot: the old one is out of use until its late load
  // returns.
  const std::vector<Rows> expected = {{0, 2, 4}, {1, 2, 4}};
  EXPECT_EQ(claims.ClaimAll(2), expected);
  EXPECT_FALSE(claims.HasWork());
  claims.ReturnOrphan(old_slot);
  std::optional<Task> b2 = claims.Claim(4);
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(RowsOf(*b2), Rows(2, 0, 4));
  EXPECT_EQ(b2->slot, old_slot);
}

TEST(RowClaims, RebindOfTheOpenBatchLoadsItsUnclaimedRowsOnlyInTheNewSlot) {
  Claims claims(Options(2, 2), EvenBatches(2, 4), /*slot_limit=*/3);
  claims.StartEpoch(0);
  std::optional<Task> first = claims.Claim(2);
  ASSERT_TRUE(first.has_value());
  Slot* old_slot = first->slot;
  claims.Rebind(old_slot, /*row=*/0, /*attempt=*/1);
  // The old slot's unclaimed rows count as finished there.
  EXPECT_EQ(old_slot->claimed, 4);
  EXPECT_EQ(old_slot->finished.load(), 2);
  std::vector<Task> tasks;
  while (std::optional<Task> task = claims.Claim(4)) tasks.push_back(*task);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(RowsOf(tasks[0]), Rows(0, 0, 4));
  EXPECT_NE(tasks[0].slot, old_slot);
  EXPECT_EQ(tasks[0].slot->timed_out[0], 2);
  EXPECT_EQ(RowsOf(tasks[1]), Rows(1, 0, 4));
}

TEST(RowClaims, RebindGrowsThePoolWhenNoSlotIsFree) {
  Claims claims(Options(2, 2), EvenBatches(2, 4), /*slot_limit=*/1);
  claims.StartEpoch(0);
  std::optional<Task> b0 = claims.Claim(4);
  ASSERT_TRUE(b0.has_value());
  claims.Rebind(b0->slot, /*row=*/0);
  EXPECT_EQ(claims.Grown(), 1);
  EXPECT_EQ(claims.SlotsCreated(), 2);
  std::optional<Task> again = claims.Claim(4);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(RowsOf(*again), Rows(0, 0, 4));
  EXPECT_NE(again->slot, b0->slot);
}

// --- Growing for a caller that holds every slot --------------------------

TEST(RowClaims, GrowIfCallerHoldsEverySlotAddsASlotOnlyWhenTheCallerHoldsEverySlot) {
  Claims claims(Options(2, 2), EvenBatches(4, 2), /*slot_limit=*/2);
  claims.StartEpoch(0);
  claims.GrowIfCallerHoldsEverySlot();  // slots are free
  EXPECT_EQ(claims.Grown(), 0);
  std::optional<Task> b0 = claims.Claim(2);
  std::optional<Task> b1 = claims.Claim(2);
  ASSERT_TRUE(b0.has_value() && b1.has_value());
  claims.GrowIfCallerHoldsEverySlot();  // both are filling: they will come back
  EXPECT_EQ(claims.Grown(), 0);
  claims.Deliver(b0->slot);
  claims.GrowIfCallerHoldsEverySlot();  // batch 1 is still filling
  EXPECT_EQ(claims.Grown(), 0);
  EXPECT_FALSE(claims.Claim(2).has_value());

  claims.Deliver(b1->slot);
  claims.GrowIfCallerHoldsEverySlot();
  EXPECT_EQ(claims.Grown(), 1);
  std::optional<Task> b2 = claims.Claim(2);
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(RowsOf(*b2), Rows(2, 0, 2));
  EXPECT_EQ(claims.SlotsCreated(), 3);
  claims.GrowIfCallerHoldsEverySlot();  // batch 2 is filling
  EXPECT_EQ(claims.Grown(), 1);
}

TEST(RowClaims, GrowIfCallerHoldsEverySlotGrowsPastALoweredLimit) {
  Claims claims(Options(2, 2), EvenBatches(4, 2), /*slot_limit=*/3);
  claims.StartEpoch(0);
  for (int b = 0; b < 3; ++b) {
    std::optional<Task> task = claims.Claim(2);
    ASSERT_TRUE(task.has_value());
    claims.Deliver(task->slot);
  }
  claims.SetSlotLimit(1);  // the caller holds 3 slots, the limit allows 1
  claims.GrowIfCallerHoldsEverySlot();
  EXPECT_EQ(claims.Grown(), 3);
  EXPECT_TRUE(claims.HasFreeSlot());
  std::optional<Task> b3 = claims.Claim(2);
  ASSERT_TRUE(b3.has_value());
  EXPECT_EQ(RowsOf(*b3), Rows(3, 0, 2));
}

TEST(RowClaims, GrowCountsASlotWaitingForALateLoadAsHeld) {
  Claims claims(Options(2, 2), EvenBatches(3, 2), /*slot_limit=*/2);
  claims.StartEpoch(0);
  std::optional<Task> b0 = claims.Claim(2);
  ASSERT_TRUE(b0.has_value());
  claims.Rebind(b0->slot, /*row=*/1);  // the batch goes to the second slot
  std::optional<Task> again = claims.Claim(2);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(RowsOf(*again), Rows(0, 0, 2));
  EXPECT_EQ(claims.Grown(), 0);
  claims.Deliver(again->slot);
  // One slot held, the other orphaned: nothing could be loaded otherwise.
  claims.GrowIfCallerHoldsEverySlot();
  EXPECT_EQ(claims.Grown(), 1);
  std::optional<Task> b1 = claims.Claim(2);
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(RowsOf(*b1), Rows(1, 0, 2));
}

// --- Lending a waiting worker's id to the consumer -----------------------

TEST(RowClaims, LendWaitingWorkerLendsOnlyAWaitingActiveWorkersId) {
  Claims claims(Options(3, 2), EvenBatches(2, 4), 4);
  claims.StartEpoch(0);
  EXPECT_EQ(claims.LendWaitingWorker(), -1);  // nobody waits
  claims.SetWaiting(2, true);
  EXPECT_EQ(claims.LendWaitingWorker(), 2);
  EXPECT_TRUE(claims.lent(2));
  EXPECT_EQ(claims.LendWaitingWorker(), -1);  // 2 is lent already
  claims.SetWaiting(0, true);
  EXPECT_EQ(claims.LendWaitingWorker(), 0);
  claims.ReturnWorker(0);
  claims.ReturnWorker(2);
  EXPECT_FALSE(claims.lent(0));
  EXPECT_FALSE(claims.lent(2));

  // A parked worker's id is not lent, though it waits.
  claims.SetWaiting(0, false);
  claims.SetActiveWorkers(2);
  EXPECT_EQ(claims.LendWaitingWorker(), -1);
  claims.SetActiveWorkers(3);
  EXPECT_EQ(claims.LendWaitingWorker(), 2);
  claims.ReturnWorker(2);

  // Nor when there is nothing to claim.
  EXPECT_EQ(claims.ClaimAll(4).size(), 2u);
  EXPECT_EQ(claims.LendWaitingWorker(), -1);
  EXPECT_FALSE(claims.lent(2));
}

TEST(RowClaims, ReturnWorkerWakesAnotherForAWakeTheLentWorkerSleptThrough) {
  Claims claims(Options(2, 2), EvenBatches(2, 4), 4);
  claims.StartEpoch(0);
  claims.SetWaiting(1, true);
  ASSERT_EQ(claims.LendWaitingWorker(), 1);
  claims.SetWaiting(1, false);  // woken while its id was lent
  bool go = false;
  double waited_s = 0;
  // Worker 0 waits at most 30 s; the wake ReturnWorker makes good is the
  // only one it gets.
  std::thread worker([&] {
    waited_s =
        claims.WaitAsWorker(0, &go, std::chrono::steady_clock::now() + std::chrono::seconds(30));
  });
  claims.ReturnWorkerOnceOneWaits(1, &go);
  worker.join();
  EXPECT_LT(waited_s, 10.0);
  EXPECT_FALSE(claims.lent(1));
}

// --- Whether to wake another worker --------------------------------------

TEST(RowClaims, WorthWakingAnotherForAnyWorkUnlessBatchesAreCheap) {
  Claims claims(Options(2, 2), EvenBatches(2, 4), 4);
  EXPECT_FALSE(claims.WorthWakingAnother(0));  // no epoch runs
  claims.StartEpoch(0);
  ASSERT_TRUE(claims.Claim(4, 0).has_value());
  EXPECT_FALSE(claims.batch_release_wakes());
  EXPECT_TRUE(claims.WorthWakingAnother(0));  // batch 1 is left
  ASSERT_TRUE(claims.Claim(4, 0).has_value());
  EXPECT_FALSE(claims.WorthWakingAnother(0));  // nothing is left
}

TEST(RowClaims, WithCheapBatchesWakingAnotherTakesTwoBatchesAndTwoFreeSlots) {
  Claims claims(Options(2, 2), EvenBatches(4, 4), /*slot_limit=*/2);
  claims.StartEpoch(0);
  claims.NoteRowCost(/*ns_per_row=*/10, /*rows=*/4);  // 40 ns a batch
  EXPECT_TRUE(claims.batch_release_wakes());
  ASSERT_TRUE(claims.Claim(2, 0).has_value());
  EXPECT_TRUE(claims.WorthWakingAnother(0));  // rows of the open batch are left
  ASSERT_TRUE(claims.Claim(2, 0).has_value());
  // Batches 1..3 are left but one slot is free: this worker loads the next
  // sooner than another could wake up for it.
  EXPECT_TRUE(claims.HasWork(0));
  EXPECT_FALSE(claims.WorthWakingAnother(0));
  claims.SetSlotLimit(3);  // two free slots
  EXPECT_TRUE(claims.WorthWakingAnother(0));
  ASSERT_TRUE(claims.Claim(4, 0).has_value());  // batch 1
  EXPECT_FALSE(claims.WorthWakingAnother(0));   // one free slot again
  claims.SetSlotLimit(5);
  ASSERT_TRUE(claims.Claim(4, 0).has_value());  // batch 2
  // Two free slots but one batch left.
  EXPECT_TRUE(claims.HasWork(0));
  EXPECT_FALSE(claims.WorthWakingAnother(0));

  claims.NoteRowCost(/*ns_per_row=*/100000, /*rows=*/4);  // 400 us a batch: not cheap
  EXPECT_FALSE(claims.batch_release_wakes());
  EXPECT_TRUE(claims.WorthWakingAnother(0));
}

// --- Claim sizes ------------------------------------------------------------

TEST(RowClaims, RoundTripClaimsHoldAbout2MsOfRowsBetweenOneAndEight) {
  std::vector<int64_t> rows(30);
  for (int64_t r = 0; r < 30; ++r) rows[static_cast<size_t>(r)] = r;
  Claims claims(Options(2, 2), {rows}, 4, /*round_trip_claims=*/true);
  claims.StartEpoch(0);
  std::vector<Rows> claimed;
  auto claim = [&](int64_t chunk) {
    std::optional<Task> task = claims.Claim(chunk);
    ASSERT_TRUE(task.has_value());
    claimed.push_back(RowsOf(*task));
  };
  claim(1);                         // no cost measured: the chunk asked for
  claims.NoteRowCost(400000, 30);   // 2 ms / 400 us: 5 rows
  claim(1);
  EXPECT_EQ(claims.row_ns(), 400000.0);
  claims.NoteRowCost(100, 30);      // 20000 rows, at most 8
  claim(1);
  claims.NoteRowCost(3000000, 30);  // 3 ms a row: one
  claim(1);
  claim(9);                         // a larger chunk asked for is kept
  claim(9);                         // the batch's last rows
  const std::vector<Rows> expected = {{0, 0, 1},   {0, 1, 6},   {0, 6, 14},
                                      {0, 14, 15}, {0, 15, 24}, {0, 24, 30}};
  EXPECT_EQ(claimed, expected);
}

TEST(RowClaims, WithoutRoundTripsAClaimIsTheChunkAskedFor) {
  Claims claims(Options(2, 2), EvenBatches(1, 8), 4);
  claims.StartEpoch(0);
  claims.NoteRowCost(100, 8);
  const std::vector<Rows> expected = {{0, 0, 1}, {0, 1, 2}, {0, 2, 3}, {0, 3, 4},
                                      {0, 4, 5}, {0, 5, 6}, {0, 6, 7}, {0, 7, 8}};
  EXPECT_EQ(claims.ClaimAll(1), expected);
}

}  // namespace
}  // namespace feedline::internal
