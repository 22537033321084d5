// SchedulerState: what the Scheduler owns, and the lock that guards it.
//
// The Scheduler's verbs are grouped by role in layers over this state, each
// a class of its own: WorkerControl (starting, stopping and parking the
// workers, worker_init), SlotControl (the slots), ClaimControl (the rows the
// workers claim) and the Scheduler on top (epochs, completion, delivery,
// interrupts). They are layers of one object, not separate objects, so that
// clang's thread-safety analysis names the lock as one capability, mu(),
// through all of them: the loops hold scheduler->mu() and call any verb.
// The parts are
//   - EpochCursor (epoch_cursor.h): the epoch, its plan, delivery and a
//     pending resume (the plan drawn beforehand, without the lock, by the
//     EpochPlanner, epoch_planner.h, which is immutable and not guarded);
//   - RowClaims (row_claims.h): binding batches to slots and the rows each
//     worker claims (with the hold-back, SlotHoldBack, and the rebinding of
//     a batch after a timeout);
//   - WorkerRoster (worker_roster.h): active, waiting and lent workers;
//   - ConsumerSignal (consumer_signal.h): what the consumer waits for, and
//     the failures and interrupts that end iteration;
//   - the SlotPool (slot_pool.h): the batch slots;
//   - the WorkerPool attached (worker_pool.h), whose state the same lock
//     guards.
//
// Thread safety: the state owns its lock, mu() (SchedulerLock, shared with
// the slot pool only so that a Batch outliving the loader can give its slot
// back under it). The parts are members GUARDED_BY it, so clang checks every
// call made to them (make test-thread-safety); they take no lock and name
// none themselves. generation() is an atomic, read by workers between rows
// without the lock.
#ifndef FEEDLINE_SRC_LOADER_SCHEDULER_STATE_H_
#define FEEDLINE_SRC_LOADER_SCHEDULER_STATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"
#include "feedline/loader_options.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/consumer_signal.h"
#include "src/loader/epoch_cursor.h"
#include "src/loader/epoch_planner.h"
#include "src/loader/load_backend.h"
#include "src/loader/row_claims.h"
#include "src/loader/scheduler_lock.h"
#include "src/loader/slot_layout.h"
#include "src/loader/slot_pool.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"
#include "src/loader/worker_roster.h"

namespace feedline::internal {

class SchedulerState {
 public:
  using Clock = std::chrono::steady_clock;

  // `batch_sampler` is null for an IterableDataset; `dataset` (null then
  // too), `backend`, `layout` and `stats` must outlive the scheduler. The
  // backend's traits switch on round-trip claims and the slot hold-back,
  // and its allocator provides the slots' storage; `slot_limit`: the most
  // slots in use at once, to begin with.
  SchedulerState(const LoaderOptions& options, std::shared_ptr<const BatchSampler> batch_sampler,
                 const Dataset* dataset, const LoadBackend* backend, const SlotLayout* layout,
                 int slot_limit, StatsCollector* stats);
  SchedulerState(const SchedulerState&) = delete;
  SchedulerState& operator=(const SchedulerState&) = delete;

  Mutex& mu() const RETURN_CAPABILITY(lock_->mu) { return lock_->mu; }
  // Where the workers wait, under mu() (for a WorkerPool to wake them).
  WorkerWakeups& wakeups() const { return lock_->wakeups; }
  // Which epoch run the loader is in; bumped by every start and abandon.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }

  // The epoch, its plan and how far delivery got, for the loader's state
  // (checkpoints, set_epoch).
  EpochCursor& cursor_locked() REQUIRES(mu()) { return cursor_; }
  bool EpochRunningLocked() const REQUIRES(mu()) { return cursor_.running(); }
  int64_t epoch_locked() const REQUIRES(mu()) { return cursor_.epoch(); }
  // Every batch of the running epoch was delivered (map-style).
  bool AllDeliveredLocked() const REQUIRES(mu()) { return cursor_.all_delivered(); }

  // Workers are attached (num_workers > 0).
  bool has_workers() const { return workers_ != nullptr; }
  // True while the workers must leave their loop (stopped or shut down).
  bool WorkersStoppingLocked() const REQUIRES(mu());
  // Read by workers between samples, without the lock.
  bool WorkersShuttingDown() const;

 protected:
  ~SchedulerState() = default;

  const LoaderOptions& options_;
  // Told the epoch's order and progress (Dataset::EpochOrder, EpochProgress),
  // under mu(); null for an IterableDataset.
  const Dataset* const plan_listener_;
  const LoadBackend* const backend_;
  StatsCollector* const stats_;
  // Draws an epoch's plan; used without the lock (epoch_planner.h says why).
  // Map-style only.
  const EpochPlanner planner_;
  const std::shared_ptr<SchedulerLock> lock_;
  // Shared with the Batch handles delivered (BatchAccess::Make);
  // everything else reaches the pool through pool_, which is guarded.
  const std::shared_ptr<SlotPool> pool_owner_;
  SlotPool* const pool_ PT_GUARDED_BY(mu());
  std::atomic<uint64_t> generation_{0};
  EpochCursor cursor_ GUARDED_BY(mu());
  // Where the order told to plan_listener_ starts in the running plan.
  int64_t order_start_ GUARDED_BY(mu()) = 0;
  WorkerRoster roster_ GUARDED_BY(mu());
  RowClaims claims_ GUARDED_BY(mu());
  ConsumerSignal consumer_ GUARDED_BY(mu());
  WorkerPool* workers_ = nullptr;  // its state is guarded by mu() too
  // Per map-style worker, 1 while its worker_init runs (set when the
  // workers start).
  std::vector<uint8_t> init_pending_ GUARDED_BY(mu());
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SCHEDULER_STATE_H_
