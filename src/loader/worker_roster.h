// WorkerRoster: which of a loader's workers may claim rows (the active
// ones; the others are parked), which wait for work, and whose id is lent
// to the consumer.
//
// Lending: a consumer that would wait for a batch of cheap rows loads rows
// itself (Engine::LoadWhileWaitingLocked) as a worker that waits for work:
// it borrows that worker's id, so a dataset sees a worker id in range (a
// worker process, a Python dataset's worker info) and never two threads at
// once under one id. The worker does not claim while its id is lent.
//
// Thread safety: a part of the Scheduler, guarded by its mutex and reached
// through Scheduler::roster_locked(); parked() and the wake-ups are safe
// without it.
#ifndef FEEDLINE_SRC_LOADER_WORKER_ROSTER_H_
#define FEEDLINE_SRC_LOADER_WORKER_ROSTER_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "src/loader/worker_wakeups.h"

namespace feedline::internal {

class WorkerRoster {
 public:
  // `num_workers` (at least 1) wait on `wakeups`, which must outlive the
  // roster. `interchangeable`: map-style workers that claim from one queue
  // (not batch_per_worker's own batches), so that a released slot needs to
  // wake only one of them while none is parked.
  WorkerRoster(int num_workers, bool interchangeable, WorkerWakeups* wakeups);

  int num_workers() const { return num_workers_; }
  bool interchangeable() const { return interchangeable_; }
  int active() const { return active_; }
  // Workers with an id >= n claim nothing (they park after their current
  // chunk); n is clamped to 1 .. num_workers. Wakes the workers: those let
  // back in were parked waiting for work.
  void SetActive(int n);
  // Some workers are parked (without the lock).
  bool parked() const { return parked_.load(std::memory_order_relaxed); }

  // Workers say when they wait for work and stop waiting.
  void SetWaiting(int worker, bool waiting);
  bool waiting(int worker) const { return waiting_[static_cast<size_t>(worker)] != 0; }
  void Lend(int worker) { lent_[static_cast<size_t>(worker)] = 1; }
  // Gives the id back; true if the worker was woken meanwhile (a wake it
  // slept through, which the caller makes good if work is left).
  bool Return(int worker);
  bool lent(int worker) const { return lent_[static_cast<size_t>(worker)] != 0; }

  // Wakes one more worker after a claim that left work: all of them when
  // some are parked, so that the one woken is not a parked one.
  void WakeAnother() const;

 private:
  const int num_workers_;
  const bool interchangeable_;
  WorkerWakeups* const wakeups_;
  int active_;
  std::atomic<bool> parked_{false};  // active_ < num_workers_
  // Per worker: waiting for work, and lent to the consumer.
  std::vector<uint8_t> waiting_;
  std::vector<uint8_t> lent_;
  bool woken_while_lent_ = false;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_WORKER_ROSTER_H_
