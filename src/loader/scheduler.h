// Scheduler: what gets loaded, into which slot, and what the consumer gets
// next. It owns the scheduling state of the loader:
//   - the epoch: where it stands (EpochCursor: its number, plan and
//     delivery), and a generation counter bumped by every start and
//     abandon, so that work of an abandoned epoch is recognised and dropped;
//   - binding: the next batch of the plan is bound to a free slot (reused
//     before another is created, up to the slot limit);
//   - claiming: workers claim the bound batch's rows in chunks (Task);
//     batches bound again after a timeout (RebindLocked) are claimed first;
//   - completion: a completed batch becomes ready (or goes back to the pool
//     if its epoch was abandoned);
//   - delivery: in order (batch k after k-1) or, with in_order = false, the
//     lowest ready batch first; the consumer waits on a progress counter;
//   - what ends iteration: a failed worker_init (fatal) and interrupts
//     (KeyboardInterrupt, std::bad_alloc), rethrown once to the consumer;
//   - the runtime controls: active workers and the slot limit.
// Who runs the loading (worker threads or processes) is the WorkerPool's
// business; how a row is loaded and collated is the BatchFiller's. Parts
// with one job each hold their own state, guarded by the scheduler's mutex:
// EpochCursor (epoch_cursor.h) and SlotHoldBack (slot_hold_back.h).
//
// Thread safety: all state is guarded by one mutex, mu(), the slot pool's
// (a released slot is new work, and workers wait on the pool for either).
// Members are GUARDED_BY it and *Locked functions REQUIRE it; clang checks
// both (make test-thread-safety). generation() is an atomic, read by workers
// between rows without the lock.
#ifndef FEEDLINE_SRC_LOADER_SCHEDULER_H_
#define FEEDLINE_SRC_LOADER_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"
#include "feedline/loader_options.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/epoch_cursor.h"
#include "src/loader/load_backend.h"
#include "src/loader/slot.h"
#include "src/loader/slot_hold_back.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

// A range of rows of one slot handed to a worker.
struct Task {
  Slot* slot = nullptr;
  int64_t begin = 0;
  int64_t end = 0;
  uint64_t generation = 0;
};

class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;

  // `batch_sampler` is null for an IterableDataset; `dataset` (null then
  // too), `backend`, `layout` and `stats` must outlive the scheduler. The
  // backend's traits switch on round-trip claims and the slot hold-back.
  Scheduler(const LoaderOptions& options, std::shared_ptr<const BatchSampler> batch_sampler,
            const Dataset* dataset, const LoadBackend* backend, const SlotLayout* layout,
            std::shared_ptr<SlotPool> pool, StatsCollector* stats);

  Mutex& mu() const RETURN_CAPABILITY(pool_->mu()) { return pool_->mu(); }

  // --- The slot pool, reached through its owner ---------------------------
  bool HasFreeSlotLocked() const REQUIRES(mu()) { return pool_->HasFreeLocked(); }
  // A free slot (nullptr if the limit is reached), and back to the pool.
  Slot* TakeFreeSlotLocked() REQUIRES(mu()) { return pool_->TakeFreeLocked(); }
  void PutSlotLocked(Slot* slot) REQUIRES(mu()) { pool_->PutLocked(slot); }
  const std::vector<std::unique_ptr<Slot>>& slots_locked() const REQUIRES(mu()) {
    return pool_->slots_locked();
  }
  // Workers wait here for work or a free slot (SlotPool::WaitForWorkLocked).
  void WaitForWorkLocked() REQUIRES(mu()) { pool_->WaitForWorkLocked(); }
  // A map-style worker waits on its own condition variable, so that a
  // single wake-up goes to the lowest-numbered waiting worker.
  // A worker that the hold-back (SlotHoldBack) keeps waiting looks again
  // after a while (HoldBackCheckLocked): the consumer may keep the batch it
  // holds.
  void WaitForWorkLocked(int worker) REQUIRES(mu()) {
    pool_->WaitForWorkLocked(worker, HoldBackCheckLocked());
  }
  void WakeWorkers() const { pool_->WakeWorkers(); }
  // The most slots in use at once (see SlotPool::SetLimitLocked).
  void SetSlotLimitLocked(int n) REQUIRES(mu());
  int slot_limit_locked() const REQUIRES(mu()) { return pool_->limit_locked(); }
  SlotUsage slot_usage_locked() const REQUIRES(mu()) { return pool_->UsageLocked(); }

  // Which epoch run the loader is in; bumped by every start and abandon.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }
  // True if work of run `generation` is still wanted (without the lock: a
  // hint, checked again under it).
  bool IsCurrent(uint64_t generation) const { return generation == generation_.load(); }

  // --- Epochs -------------------------------------------------------------
  // Map-style: plans `epoch` (or the pinned one) and binds from batch
  // `first_batch`. Throws Error for a plan too large or a first_batch past
  // the end.
  void StartEpochLocked(int64_t epoch, int64_t first_batch) REQUIRES(mu());
  // IterableDataset: starts the next epoch (no plan); returns its number.
  int64_t StartStreamEpochLocked() REQUIRES(mu());
  // Abandons the running epoch: unclaimed rows are dropped, ready batches go
  // back to the pool, in-flight samples are cancelled between rows (and the
  // backend is told, LoadBackend::AbandonInFlight).
  void AbandonEpochLocked() REQUIRES(mu());
  // The loader is going away: work in flight is dropped (the generation
  // moves) and the backend is told to stop what it can (AbandonInFlight).
  void ShutdownLocked() REQUIRES(mu());
  // Where the epoch stands: its number, plan, delivery, a pending resume
  // (epoch_cursor.h).
  EpochCursor& cursor_locked() REQUIRES(mu()) { return cursor_; }
  const EpochCursor& cursor_locked() const REQUIRES(mu()) { return cursor_; }

  // --- Workers' side (map-style) ------------------------------------------
  // True if `worker` may claim rows now (an active worker, and a batch to
  // claim from or a slot to bind the next one to).
  bool HasWorkLocked(int worker) const REQUIRES(mu());
  // After `worker` claimed: whether the work left is worth waking another
  // worker for. Any work is, except with cheap batches (see
  // SlotPool::set_batch_release_wakes), where one more batch is loaded by
  // this worker sooner than another could wake up for it: it takes two.
  bool WorthWakingAnotherLocked(int worker) const REQUIRES(mu());
  // Wakes one more worker after a claim that left work (all of them when
  // some are parked, so that the one woken is not a parked one).
  void WakeAnotherWorker() const EXCLUDES(mu());
  bool workers_parked() const { return workers_parked_.load(std::memory_order_relaxed); }
  // A worker measured `ns_per_row` (its moving average) loading a batch of
  // `rows`: batches that load in microseconds get their released slots a
  // few at a time (SlotPool::set_batch_release_wakes). Without the lock.
  void NoteRowCost(double ns_per_row, int64_t rows);
  // The last cost per row a worker measured (0 before any).
  double row_ns() const { return row_ns_.load(std::memory_order_relaxed); }
  // LoaderOptions::batch_per_worker (with workers and a batch sampler):
  // worker w binds and loads batches w, w + n, w + 2n, ... whole, at most
  // prefetch_factor undelivered.
  bool batch_per_worker() const { return batch_per_worker_; }
  // True while the hold-back (SlotHoldBack, with a backend of shared slots)
  // keeps workers from claiming: they then wait at most until this time,
  // and look again.
  std::optional<Clock::time_point> HoldBackCheckLocked() const REQUIRES(mu());

  // --- Lending a waiting worker's place to the consumer ---------------------
  // A consumer that would wait for a batch of cheap rows loads rows itself
  // (Engine::LoadWhileWaitingLocked), as a worker that waits for work: it
  // borrows that worker's id, so a dataset sees a worker id in range (a
  // worker process, a Python dataset's worker info) and never two threads
  // at once under one id. The worker does not claim while its id is lent.
  // Workers say when they wait for work and stop waiting.
  void SetWorkerWaitingLocked(int worker, bool waiting) REQUIRES(mu());
  // Lends the id of an active worker that waits for work while there is work
  // to claim; -1 if none.
  int LendWaitingWorkerLocked() REQUIRES(mu());
  // Gives the id back; wakes a worker if the lent one was woken meanwhile
  // (and work is left).
  void ReturnWorkerLocked(int worker) REQUIRES(mu());
  bool lent_locked(int worker) const REQUIRES(mu()) {
    return lent_[static_cast<size_t>(worker)] != 0;
  }
  // Claims up to `chunk` rows: of a batch bound again after a timeout
  // first, else of the open batch, else binds the next batch to a free
  // slot. False if there is nothing to claim. Throws std::bad_alloc sizing
  // a slot (which stays usable).
  // With batch_per_worker, `worker` claims only its own batches, whole.
  bool ClaimLocked(int64_t chunk, Task* task, int worker = -1) REQUIRES(mu());
  // A load of row `late.row` ran past the timeout: the slot is given up
  // (it returns to the pool when the late load does) and its batch is bound
  // again to a fresh slot, that row failed ("timeout").
  void RebindLocked(const LateLoad& late) REQUIRES(mu());

  // --- Completion ----------------------------------------------------------
  // True if `slot`'s batch is no longer wanted (its epoch was abandoned or
  // it was bound again); read without the lock, and checked again by
  // Complete.
  bool IsStale(const Slot* slot) const;
  // The last row of `slot` finished (and it was collated unless `stale`):
  // marks it ready for the consumer, counting its outcomes, or returns it
  // to the pool if it is stale. Returns true if it was made ready.
  bool Complete(Slot* slot, bool stale) EXCLUDES(mu());

  // --- Consumer's side -----------------------------------------------------
  // The next ready batch to deliver (map-style), or nullptr; advances the
  // in-order position.
  Slot* TakeReadyLocked() REQUIRES(mu());
  // Hands `slot` to the consumer: returns the batch, throws its error, or
  // returns nullopt for an empty batch (every sample skipped).
  std::optional<Batch> DeliverLocked(Slot* slot) REQUIRES(mu());
  // Adds slots when the caller holds all of them (list(loader)), or, with
  // batch_per_worker, when the awaited batch has no slot and none is free,
  // since no batch could be loaded otherwise.
  void GrowIfCallerHoldsEverySlotLocked() REQUIRES(mu());
  // Adds one slot and wakes the workers: for a producer the consumer waits
  // for, which cannot get a slot while the others hold theirs (streams).
  void GrowOneSlotLocked() REQUIRES(mu()) {
    pool_->GrowLocked();
    pool_->WakeWorkers();
  }
  // Waits until an event the consumer may wait for (a batch ready, a stream
  // ended, a failure) happens, `wake_after` passes, or `deadline` passes;
  // false if the deadline had passed before waiting. Releases the mutex
  // while it waits.
  bool WaitForProgressLocked(std::optional<Clock::time_point> deadline,
                             std::optional<std::chrono::milliseconds> wake_after) REQUIRES(mu());
  // Bumps the progress counter and wakes the consumer.
  void NotifyProgressLocked() REQUIRES(mu());

  // --- What ends iteration -------------------------------------------------
  // A worker cannot start (worker_init failed): every Next() rethrows it.
  void FailLocked(std::exception_ptr error) REQUIRES(mu());
  // Something that is not a failed sample escaped a dataset, a collate
  // function or the engine (an interrupt such as Python's KeyboardInterrupt,
  // std::bad_alloc): ends the epoch; the consumer's next call rethrows it
  // once. Dropped if `generation` (the work's) is no longer the running one.
  void Interrupt(std::exception_ptr error, uint64_t generation) EXCLUDES(mu());
  void InterruptLocked(std::exception_ptr error) REQUIRES(mu());
  // Rethrows (once) what Interrupt recorded.
  void ThrowInterruptLocked() REQUIRES(mu());
  // Rethrows a worker failure (every time), or (once) an interrupt.
  void ThrowPendingLocked() REQUIRES(mu());
  void ClearInterruptLocked() REQUIRES(mu()) { interrupt_ = nullptr; }

  // --- Runtime controls ----------------------------------------------------
  // Workers with an id >= n claim nothing (they park after their current
  // chunk); n is clamped to 1 .. num_workers. The batches do not change.
  void SetActiveWorkersLocked(int n) REQUIRES(mu());
  int active_workers_locked() const REQUIRES(mu()) { return active_workers_; }

 private:
  void BindLocked(Slot* slot, int64_t batch_index) REQUIRES(mu());
  // Accounts a slot's unclaimed rows as finished (the slot will not be
  // loaded further) and returns it to the pool if nothing else is pending.
  void DropUnclaimedLocked(Slot* slot) REQUIRES(mu());
  // Adds the batch's errors, skipped and replaced rows to the statistics.
  void CountOutcomes(const Slot* slot);
  // True if the next batch should wait for a released slot instead of a new
  // one being made for it (SlotHoldBack).
  bool HoldsBackNewSlotLocked() const REQUIRES(mu());

  const LoaderOptions& options_;
  const std::shared_ptr<const BatchSampler> batch_sampler_;
  const Dataset* const dataset_;
  const LoadBackend* const backend_;
  EpochCursor cursor_ GUARDED_BY(mu());
  const SlotLayout* const layout_;
  const std::shared_ptr<SlotPool> pool_;
  StatsCollector* const stats_;
  const int num_workers_;

  int64_t next_bind_ GUARDED_BY(mu()) = 0;     // next batch to bind to a slot
  // batch_per_worker: per worker, the next batch it binds, the batch it is
  // loading (null when none) and its batches bound but not yet delivered.
  bool batch_per_worker_ = false;
  std::vector<int64_t> own_next_ GUARDED_BY(mu());
  std::vector<Slot*> own_open_ GUARDED_BY(mu());
  std::vector<int> own_undelivered_ GUARDED_BY(mu());
  // batch_per_worker: `worker`'s own batch to claim, bound now if needed;
  // null if it has none (its next is past the end, or over its quota).
  Slot* OwnBatchLocked(int worker) REQUIRES(mu());
  // True if batch `batch_index` of the running epoch is being loaded or ready.
  bool BoundLocked(int64_t batch_index) const REQUIRES(mu());
  bool HasOwnWorkLocked(int worker) const REQUIRES(mu());
  // The bound batch whose rows are being claimed.
  Slot* open_ GUARDED_BY(mu()) = nullptr;
  // Batches bound again after a timeout, whose rows are claimed before the
  // open batch's.
  std::vector<Slot*> retry_ GUARDED_BY(mu());
  int orphaned_slots_ GUARDED_BY(mu()) = 0;  // slots waiting for a late load to return
  std::exception_ptr fatal_ GUARDED_BY(mu());      // a worker_init failure
  std::exception_ptr interrupt_ GUARDED_BY(mu());  // rethrown once by the consumer
  int active_workers_ GUARDED_BY(mu());
  // active_workers_ < num_workers_, for WakeAnotherWorker without the lock.
  std::atomic<bool> workers_parked_{false};
  // Per worker: waiting for work (in WaitForWorkLocked), and lent to the consumer.
  std::vector<uint8_t> waiting_ GUARDED_BY(mu());
  std::vector<uint8_t> lent_ GUARDED_BY(mu());
  bool woken_while_lent_ GUARDED_BY(mu()) = false;
  std::atomic<double> row_ns_{0};
  // Each row costs a round trip unless several go together
  // (LoadsRowsTogether): claims then hold enough rows for ~250 us of loading, at
  // most 8 (RoundTripChunk), so that the round trip is a small share of a
  // claim while a batch's tail stays balanced.
  const bool round_trip_claims_;
  SlotHoldBack hold_back_ GUARDED_BY(mu());

  std::atomic<uint64_t> generation_{0};
  // Bumped (under the mutex) by every event the consumer may wait for: a
  // batch ready, a stream exhausted, a worker failing.
  std::atomic<uint64_t> progress_{0};
  // The consumer waits here for progress_ to move; counted so that workers
  // notify only when it waits.
  CondVar ready_cv_;
  int consumer_waiting_ GUARDED_BY(mu()) = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SCHEDULER_H_
