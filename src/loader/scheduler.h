// Scheduler: what gets loaded, into which slot, and what the consumer gets
// next. A facade over parts with one job each, all guarded by one mutex:
//   - EpochCursor (epoch_cursor.h): the epoch, its plan, delivery and a
//     pending resume;
//   - RowClaims (row_claims.h): binding batches to slots and the rows each
//     worker claims (with the hold-back, SlotHoldBack, and the rebinding of
//     a batch after a timeout);
//   - WorkerRoster (worker_roster.h): active, waiting and lent workers;
//   - ConsumerSignal (consumer_signal.h): what the consumer waits for, and
//     the failures and interrupts that end iteration;
//   - the SlotPool (slot_pool.h): the batch slots.
// The scheduler itself does what involves several parts: starting and
// abandoning an epoch (a generation counter, bumped by every start and
// abandon, marks the work of an abandoned epoch so that it is dropped),
// completing a batch, handing batches to the consumer, interrupts.
// Who runs the loading (worker threads or processes) is the WorkerPool's
// business (the scheduler starts and stops it, AttachWorkers); how a row is
// loaded and collated is the BatchFiller's. The loops that drive the
// loading and the delivery (map_worker_loop.h, map_consumer_loop.h,
// iterable_producer.h) call the verbs below, each a short step under the
// lock.
//
// Thread safety: the scheduler owns its lock, mu() (SchedulerLock, shared
// with the slot pool only so that a Batch outliving the loader can give its
// slot back under it). The parts are members GUARDED_BY it, so clang checks
// every call made to them (make test-thread-safety); they take no lock and
// name none themselves. *Locked functions REQUIRE it. generation() is an
// atomic, read by workers between rows without the lock.
#ifndef FEEDLINE_SRC_LOADER_SCHEDULER_H_
#define FEEDLINE_SRC_LOADER_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"
#include "feedline/loader_options.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/consumer_signal.h"
#include "src/loader/epoch_cursor.h"
#include "src/loader/load_backend.h"
#include "src/loader/row_claims.h"
#include "src/loader/scheduler_lock.h"
#include "src/loader/slot.h"
#include "src/loader/slot_layout.h"
#include "src/loader/slot_pool.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"
#include "src/loader/worker_roster.h"

namespace feedline::internal {

class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;

  // `batch_sampler` is null for an IterableDataset; `dataset` (null then
  // too), `backend`, `layout` and `stats` must outlive the scheduler. The
  // backend's traits switch on round-trip claims and the slot hold-back,
  // and its allocator provides the slots' storage; `slot_limit`: the most
  // slots in use at once, to begin with.
  Scheduler(const LoaderOptions& options, std::shared_ptr<const BatchSampler> batch_sampler,
            const Dataset* dataset, const LoadBackend* backend, const SlotLayout* layout,
            int slot_limit, StatsCollector* stats);

  Mutex& mu() const RETURN_CAPABILITY(lock_->mu) { return lock_->mu; }
  // Where the workers wait, under mu() (for a WorkerPool to wake them).
  WorkerWakeups& wakeups() const { return lock_->wakeups; }

  // The epoch, its plan and how far delivery got, for the loader's state
  // (checkpoints, set_epoch).
  EpochCursor& cursor_locked() REQUIRES(mu()) { return cursor_; }

  // --- Workers ------------------------------------------------------------
  // The pool that runs the workers, attached once before any epoch starts;
  // none with num_workers = 0. Its state is guarded by mu() too.
  void AttachWorkers(WorkerPool* workers) { workers_ = workers; }
  bool has_workers() const { return workers_ != nullptr; }
  void StopWorkersLocked() REQUIRES(mu());
  // Stops the workers, if they run, and starts them again (a stream's
  // workers open their streams anew each epoch).
  void RestartWorkersLocked() REQUIRES(mu());
  // True while the workers must leave their loop (stopped or shut down).
  bool WorkersStoppingLocked() const REQUIRES(mu());
  // Read by workers between samples, without the lock.
  bool WorkersShuttingDown() const;
  // Lets only workers 0 .. n-1 claim rows (WorkerRoster::SetActive).
  void SetActiveWorkersLocked(int n) REQUIRES(mu()) { roster_.SetActive(n); }
  int active_workers_locked() const REQUIRES(mu()) { return roster_.active(); }

  // --- worker_init ----------------------------------------------------------
  // Worker `worker`'s worker_init returned (or threw): an epoch whose
  // batches are all out ends only once none runs, so that a worker_init
  // that fails after the others loaded every batch is still raised.
  void WorkerInitDoneLocked(int worker) REQUIRES(mu());
  bool WorkerInitPendingLocked() const REQUIRES(mu());
  // A worker cannot start: every Next() rethrows `error`.
  void FailLocked(std::exception_ptr error) REQUIRES(mu());

  // --- Claims (map-style) --------------------------------------------------
  // As worker `worker`: waits until it may claim rows and claims up to
  // `chunk` (RowClaims::Claim), or returns false once the workers stop.
  // Releases the mutex while it waits. Throws std::bad_alloc sizing a
  // slot. *wake_another: the work left is worth waking another worker for
  // (WakeAnotherWorker, once the mutex is released).
  bool NextTaskLocked(int worker, int64_t chunk, Task* task, bool* wake_another) REQUIRES(mu());
  void WakeAnotherWorker() const NO_THREAD_SAFETY_ANALYSIS;
  // Stream workers: wait (releasing the mutex) on their shared wake-up
  // until something changes; wake all of them (without the lock).
  void WaitAsStreamWorkerLocked() REQUIRES(mu()) { lock_->wakeups.Wait(mu()); }
  void WakeWorkers() const { lock_->wakeups.WakeAll(); }
  // A worker measured `ns_per_row` loading a batch of `batch_rows`
  // (RowClaims::NoteRowCost); without the lock.
  void NoteRowCost(double ns_per_row, int64_t batch_rows) NO_THREAD_SAFETY_ANALYSIS;
  // As the consumer's thread (or, with an id, as that worker): claims up to
  // `chunk` rows.
  bool ClaimLocked(int64_t chunk, Task* task, int worker = -1) REQUIRES(mu()) {
    return claims_.Claim(chunk, task, worker);
  }
  // The last cost per row a worker measured (0 before any).
  double row_ns_locked() const REQUIRES(mu()) { return claims_.row_ns(); }
  // Lending a waiting worker's id to the consumer (RowClaims).
  int LendWaitingWorkerLocked() REQUIRES(mu()) { return claims_.LendWaitingWorker(); }
  void ReturnWorkerLocked(int worker) REQUIRES(mu()) { claims_.ReturnWorker(worker); }
  void GrowIfCallerHoldsEverySlotLocked() REQUIRES(mu()) {
    claims_.GrowIfCallerHoldsEverySlot();
  }

  // --- Slots --------------------------------------------------------------
  // The most slots in use at once (SlotPool::SetLimitLocked).
  void SetSlotLimitLocked(int n) REQUIRES(mu()) { pool_->SetLimitLocked(n); }
  int slot_limit_locked() const REQUIRES(mu()) { return pool_->limit_locked(); }
  SlotUsage SlotUsageLocked() const REQUIRES(mu()) { return pool_->UsageLocked(); }
  // For a stream's producer, which binds its own batches: a slot can be
  // taken now; a free slot (never null: call after HasFreeSlotLocked, or
  // after GrowSlotsLocked); a slot given back unused.
  bool HasFreeSlotLocked() const REQUIRES(mu()) { return pool_->HasFreeLocked(); }
  Slot* TakeFreeSlotLocked() REQUIRES(mu()) { return pool_->TakeFreeLocked(); }
  void PutSlotLocked(Slot* slot) REQUIRES(mu()) { pool_->PutLocked(slot); }
  // One slot more than the limit, and the workers woken for it.
  void GrowSlotsLocked() REQUIRES(mu());
  // The first slot of the running epoch (its generation) that `match`
  // accepts, or nullptr.
  template <typename Match>
  Slot* FindSlotLocked(const Match& match) const REQUIRES(mu()) {
    const uint64_t generation = generation_.load();
    for (const auto& slot : pool_->slots_locked()) {
      if (slot->generation == generation && match(*slot)) return slot.get();
    }
    return nullptr;
  }

  // Which epoch run the loader is in; bumped by every start and abandon.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }

  // --- Epochs -------------------------------------------------------------
  // Map-style: plans `epoch` (or the pinned one) and binds from batch
  // `first_batch`, and starts the workers if they are not running. Throws
  // Error for a plan too large or a first_batch past the end.
  void StartEpochLocked(int64_t epoch, int64_t first_batch) REQUIRES(mu());
  // IterableDataset: starts the next epoch (no plan); returns its number.
  int64_t StartStreamEpochLocked() REQUIRES(mu());
  bool EpochRunningLocked() const REQUIRES(mu()) { return cursor_.running(); }
  int64_t epoch_locked() const REQUIRES(mu()) { return cursor_.epoch(); }
  // Reset(): a restored position and an interrupt of the epoch abandoned
  // here are dropped, the epoch is abandoned, and the workers stop if
  // `stop_workers`.
  void ResetLocked(bool stop_workers) REQUIRES(mu());
  // Abandons the running epoch: unclaimed rows are dropped, ready batches go
  // back to the pool, in-flight samples are cancelled between rows (and the
  // backend is told, LoadBackend::AbandonInFlight).
  void AbandonEpochLocked() REQUIRES(mu());
  // The loader is going away: work in flight is dropped (the generation
  // moves), the backend is told to stop what it can (AbandonInFlight) and
  // the workers are stopped for good.
  void ShutdownLocked() REQUIRES(mu());
  // After ShutdownLocked: waits for workers given up on after a timeout,
  // which may still be inside a sample (WorkerPool::JoinRetired).
  void JoinRetiredWorkers() EXCLUDES(mu());
  // The consumer asks for a batch (map-style): a restored epoch, once
  // consumed, is an ordinary one; a pending interrupt is rethrown; an epoch
  // starts (the next one, at batch 0) if none runs.
  void BeginTakeLocked() REQUIRES(mu());
  // Every batch of the running epoch was delivered (map-style).
  bool AllDeliveredLocked() const REQUIRES(mu()) { return cursor_.all_delivered(); }
  // The epoch ended; the workers stop if `stop_workers`.
  void FinishEpochLocked(bool stop_workers) REQUIRES(mu());
  // A load ran past the timeout (RowClaims::Rebind); without memory to bind
  // its batch again, the epoch is interrupted.
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
  // Waits until an event the consumer may wait for (a batch ready, a stream
  // ended, a failure) happens, `wake_after` passes, or `deadline` passes;
  // false if the deadline had passed before waiting. Releases the mutex
  // while it waits.
  bool WaitForProgressLocked(std::optional<Clock::time_point> deadline,
                             std::optional<std::chrono::milliseconds> wake_after) REQUIRES(mu());
  // Map-style: waits as WaitForProgressLocked does; with a timeout, wakes
  // regularly to give up on loads past it (AbandonLateLoadsLocked).
  bool WaitForBatchLocked(std::optional<Clock::time_point> deadline) REQUIRES(mu());
  // Rethrows a worker failure (every time), or (once) an interrupt.
  void ThrowPendingLocked() REQUIRES(mu()) { consumer_.ThrowPending(); }
  // Rethrows (once) an interrupt.
  void ThrowInterruptLocked() REQUIRES(mu()) { consumer_.ThrowInterrupt(); }
  // Wakes a consumer waiting for progress (a stream ended).
  void NotifyConsumerLocked() REQUIRES(mu()) { consumer_.Notify(); }

  // --- Interrupts ----------------------------------------------------------
  // Something that is not a failed sample escaped a dataset, a collate
  // function or the engine (an interrupt such as Python's KeyboardInterrupt,
  // std::bad_alloc): ends the epoch; the consumer's next call rethrows it
  // once (ConsumerSignal::ThrowInterrupt). Dropped if `generation` (the
  // work's) is no longer the running one.
  void Interrupt(std::exception_ptr error, uint64_t generation) EXCLUDES(mu());
  void InterruptLocked(std::exception_ptr error) REQUIRES(mu());

 private:
  // Gives up on loads past the timeout: their batches are bound again to
  // fresh slots, with those rows failed ("timeout"), and their workers
  // replaced.
  void AbandonLateLoadsLocked() REQUIRES(mu());
  // Adds the batch's errors, skipped and replaced rows to the statistics.
  void CountOutcomes(const Slot* slot);

  const LoaderOptions& options_;
  const LoadBackend* const backend_;
  StatsCollector* const stats_;
  const std::shared_ptr<SchedulerLock> lock_;
  // Shared with the Batch handles delivered (BatchAccess::Make);
  // everything else reaches the pool through pool_, which is guarded.
  const std::shared_ptr<SlotPool> pool_owner_;
  SlotPool* const pool_ PT_GUARDED_BY(mu());
  std::atomic<uint64_t> generation_{0};
  EpochCursor cursor_ GUARDED_BY(mu());
  WorkerRoster roster_ GUARDED_BY(mu());
  RowClaims claims_ GUARDED_BY(mu());
  ConsumerSignal consumer_ GUARDED_BY(mu());
  WorkerPool* workers_ = nullptr;  // its state is guarded by mu() too
  // Per map-style worker, 1 while its worker_init runs (set when the
  // workers start).
  std::vector<uint8_t> init_pending_ GUARDED_BY(mu());
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SCHEDULER_H_
