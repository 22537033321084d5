// Scheduler: what gets loaded, into which slot, and what the consumer gets
// next. The top layer of the scheduling verbs (scheduler_state.h says what
// the layers are and what they own): what involves several parts, starting
// and abandoning an epoch (a generation counter, bumped by every start and
// abandon, marks the work of an abandoned epoch so that it is dropped),
// completing a batch, handing batches to the consumer, interrupts. The
// layers below hold the verbs about the workers (WorkerControl), the slots
// (SlotControl) and the claims (ClaimControl).
// Who runs the loading (worker threads or processes) is the WorkerPool's
// business (the scheduler starts and stops it, AttachWorkers); how a row is
// loaded and collated is the BatchFiller's. The loops that drive the
// loading and the delivery (map_worker_loop.h, map_consumer_loop.h,
// iterable_producer.h) call the verbs, each a short step under the lock.
//
// Thread safety: the scheduler owns its lock, mu() (SchedulerState); the
// parts are GUARDED_BY it and *Locked functions REQUIRE it; clang checks
// both (make test-thread-safety).
#ifndef FEEDLINE_SRC_LOADER_SCHEDULER_H_
#define FEEDLINE_SRC_LOADER_SCHEDULER_H_

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>

#include "feedline/batch.h"
#include "src/core/thread_annotations.h"
#include "src/loader/claim_control.h"
#include "src/loader/slot.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class Scheduler : public ClaimControl {
 public:
  using ClaimControl::ClaimControl;

  // --- Epochs -------------------------------------------------------------
  // Map-style: `epoch` (or the pinned one) with its plan, drawn from the
  // batch sampler without the lock (epoch_planner.h says why). Throws Error
  // for a plan too large to hold.
  PlannedEpoch PlanEpoch(int64_t epoch) const EXCLUDES(mu()) { return planner_.Plan(epoch); }
  // Map-style: runs the planned epoch, binding from batch `first_batch`, and
  // starts the workers if they are not running. Throws Error for a
  // first_batch past the end.
  void StartEpochLocked(PlannedEpoch planned, int64_t first_batch) REQUIRES(mu());
  // IterableDataset: starts the next epoch (no plan); returns its number.
  int64_t StartStreamEpochLocked() REQUIRES(mu());
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
  // The consumer asks for a batch (map-style): a restored epoch, once
  // consumed, is an ordinary one; a pending interrupt is rethrown; an epoch
  // starts (the next one, at batch 0) if none runs, planned with the lock
  // released meanwhile.
  void BeginTakeLocked() REQUIRES(mu());
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
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SCHEDULER_H_
