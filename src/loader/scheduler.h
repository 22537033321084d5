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
//   - the SlotPool (slot_pool.h), whose WorkerWakeups the workers wait on.
// The scheduler itself does what involves several parts: starting and
// abandoning an epoch (a generation counter, bumped by every start and
// abandon, marks the work of an abandoned epoch so that it is dropped),
// completing a batch, handing batches to the consumer, interrupts.
// Who runs the loading (worker threads or processes) is the WorkerPool's
// business; how a row is loaded and collated is the BatchFiller's.
//
// Thread safety: the mutex is the slot pool's, mu() (a released slot is new
// work, and workers wait on the pool for either). The parts are
// GUARDED_BY it and reached through *_locked() accessors that REQUIRE it;
// *Locked functions REQUIRE it; clang checks both (make
// test-thread-safety). Functions of the pool and the parts that take the
// pool name its mutex, pool().mu(), the same capability as mu().
// generation() is an atomic, read by workers between rows without the lock.
#ifndef FEEDLINE_SRC_LOADER_SCHEDULER_H_
#define FEEDLINE_SRC_LOADER_SCHEDULER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

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
  // backend's traits switch on round-trip claims and the slot hold-back.
  Scheduler(const LoaderOptions& options, std::shared_ptr<const BatchSampler> batch_sampler,
            const Dataset* dataset, const LoadBackend* backend, const SlotLayout* layout,
            std::shared_ptr<SlotPool> pool, StatsCollector* stats);

  SlotPool& pool() const { return *pool_; }
  Mutex& mu() const RETURN_CAPABILITY(pool().mu()) { return pool().mu(); }

  // --- The parts ------------------------------------------------------------
  EpochCursor& cursor_locked() REQUIRES(mu()) { return cursor_; }
  RowClaims& claims_locked() REQUIRES(mu()) { return claims_; }
  WorkerRoster& roster_locked() REQUIRES(mu()) { return roster_; }
  ConsumerSignal& consumer_locked() REQUIRES(mu()) { return consumer_; }

  // Which epoch run the loader is in; bumped by every start and abandon.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }

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

  // --- Interrupts ----------------------------------------------------------
  // Something that is not a failed sample escaped a dataset, a collate
  // function or the engine (an interrupt such as Python's KeyboardInterrupt,
  // std::bad_alloc): ends the epoch; the consumer's next call rethrows it
  // once (ConsumerSignal::ThrowInterrupt). Dropped if `generation` (the
  // work's) is no longer the running one.
  void Interrupt(std::exception_ptr error, uint64_t generation) EXCLUDES(mu());
  void InterruptLocked(std::exception_ptr error) REQUIRES(mu());

 private:
  // Adds the batch's errors, skipped and replaced rows to the statistics.
  void CountOutcomes(const Slot* slot);

  const LoaderOptions& options_;
  // Told the epoch's order and progress (Dataset::EpochOrder); null for an
  // IterableDataset.
  const Dataset* const dataset_;
  const LoadBackend* const backend_;
  const std::shared_ptr<SlotPool> pool_;
  StatsCollector* const stats_;
  std::atomic<uint64_t> generation_{0};
  EpochCursor cursor_ GUARDED_BY(mu());
  // Where the order told to dataset_ starts in the running plan.
  int64_t order_start_ GUARDED_BY(mu()) = 0;
  WorkerRoster roster_ GUARDED_BY(mu());
  RowClaims claims_ GUARDED_BY(mu());
  ConsumerSignal consumer_ GUARDED_BY(mu());
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SCHEDULER_H_
