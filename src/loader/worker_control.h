// WorkerControl: the Scheduler's verbs about its workers (a layer over
// SchedulerState, scheduler_state.h): the WorkerPool it starts and stops,
// which workers may claim rows, how stream workers wait, and worker_init's
// outcome.
//
// Thread safety: *Locked functions REQUIRE the scheduler's mutex; the
// wake-ups are safe without it.
#ifndef FEEDLINE_SRC_LOADER_WORKER_CONTROL_H_
#define FEEDLINE_SRC_LOADER_WORKER_CONTROL_H_

#include <exception>

#include "src/core/thread_annotations.h"
#include "src/loader/scheduler_state.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class WorkerControl : public SchedulerState {
 public:
  using SchedulerState::SchedulerState;

  // The pool that runs the workers, attached once before any epoch starts;
  // none with num_workers = 0.
  void AttachWorkers(WorkerPool* workers) { workers_ = workers; }
  void StopWorkersLocked() REQUIRES(mu());
  // Stops the workers, if they run, and starts them again (a stream's
  // workers open their streams anew each epoch).
  void RestartWorkersLocked() REQUIRES(mu());
  // After ShutdownLocked: waits for workers given up on after a timeout,
  // which may still be inside a sample (WorkerPool::JoinRetired).
  void JoinRetiredWorkers() EXCLUDES(mu());

  // Lets only workers 0 .. n-1 claim rows (WorkerRoster::SetActive).
  void SetActiveWorkersLocked(int n) REQUIRES(mu()) { roster_.SetActive(n); }
  int active_workers_locked() const REQUIRES(mu()) { return roster_.active(); }
  // Wakes one more worker after a claim that left work (without the lock).
  void WakeAnotherWorker() const NO_THREAD_SAFETY_ANALYSIS;
  // Stream workers: wait (releasing the mutex) on their shared wake-up
  // until something changes; wake all of them (without the lock).
  void WaitAsStreamWorkerLocked() REQUIRES(mu()) { lock_->wakeups.Wait(mu()); }
  void WakeWorkers() const { lock_->wakeups.WakeAll(); }

  // Worker `worker`'s worker_init returned (or threw): an epoch whose
  // batches are all out ends only once none runs, so that a worker_init
  // that fails after the others loaded every batch is still raised.
  void WorkerInitDoneLocked(int worker) REQUIRES(mu());
  bool WorkerInitPendingLocked() const REQUIRES(mu());
  // A worker cannot start: every Next() rethrows `error`.
  void FailLocked(std::exception_ptr error) REQUIRES(mu());

 protected:
  ~WorkerControl() = default;
  // Starts the workers if they are not running (each with its worker_init
  // pending).
  void StartWorkersLocked() REQUIRES(mu());
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_WORKER_CONTROL_H_
