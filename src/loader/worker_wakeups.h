// WorkerWakeups: where a loader's workers wait for work (a batch to claim or
// a free slot to bind one to), and whom a change wakes.
//
// Map-style workers wait each on their own condition variable
// (SetWorkerCount, before any worker starts), so that WakeOne can choose
// whom to wake: the lowest-numbered waiting worker. With cheap batches one
// worker then does the loading and stays on its core; a single shared
// condition variable woke the waiters in turn (oldest first), and the one
// woken each time was placed beside the consumer, preempting it, while the
// other core idled (perf sched). Stream workers share one condition
// variable.
//
// Waiters are counted so that notifying only when someone waits keeps futex
// calls off the per-batch path.
//
// Thread safety: the waits and the count of waiters are under the mutex the
// caller passes (the scheduler's, SchedulerLock: a released slot and new
// work must be seen under one lock); the wake-ups and the two policies are
// safe without it.
#ifndef FEEDLINE_SRC_LOADER_WORKER_WAKEUPS_H_
#define FEEDLINE_SRC_LOADER_WORKER_WAKEUPS_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"

namespace feedline::internal {

class WorkerWakeups {
 public:
  // One condition variable per map-style worker; call before any waits.
  void SetWorkerCount(int n);

  // Blocks (releasing `mu`) until woken, possibly spuriously: callers loop
  // on their condition. The shared condition variable (stream workers).
  void Wait(Mutex& mu) REQUIRES(mu);
  // Worker `worker`'s own condition variable; with `until`, at most until then.
  void Wait(Mutex& mu, int worker,
            std::optional<std::chrono::steady_clock::time_point> until) REQUIRES(mu);
  // Under the mutex the waits release (the scheduler's).
  bool AnyWaiting() const { return waiting_ > 0; }

  void WakeAll();
  // Wakes the lowest-numbered waiting worker (or one waiter of the shared
  // condition variable). Without the lock: a worker counts itself waiting
  // under it, so one that waits for a change made under it before this
  // call is seen.
  void WakeOne();

  // Whether a released slot wakes one waiting worker or all of them. One is
  // enough when the waiters are interchangeable (map-style workers, none
  // parked: the one woken wakes another if it leaves work behind); waking
  // all of them for one slot had every waiter but one wake up, find nothing
  // and sleep again, once per batch.
  void set_wake_one_on_release(bool one) {
    wake_one_on_release_.store(one, std::memory_order_relaxed);
  }
  bool wake_one_on_release() const { return wake_one_on_release_.load(std::memory_order_relaxed); }
  // With `batch` set, a released slot wakes a waiting worker only once half
  // the slot limit is free, so that a worker woken fills several batches
  // per wake-up. Meant for batches that take microseconds to load, where
  // the wake-up and the context switch, once per batch, cost more than the
  // loading; whoever is about to wait for a batch must then wake the
  // workers itself (Scheduler::WaitForProgressLocked does).
  void set_batch_release_wakes(bool batch) {
    batch_release_wakes_.store(batch, std::memory_order_relaxed);
  }
  bool batch_release_wakes() const { return batch_release_wakes_.load(std::memory_order_relaxed); }

 private:
  CondVar shared_cv_;
  std::vector<std::unique_ptr<CondVar>> worker_cvs_;
  // Per worker, its waits in progress: a count, not a flag, since a worker
  // replaced after a timeout shares its id with the thread it replaced.
  std::unique_ptr<std::atomic<int>[]> worker_waits_;
  int waiting_ = 0;  // under the caller's mutex (Wait, AnyWaiting)
  std::atomic<bool> wake_one_on_release_{false};
  std::atomic<bool> batch_release_wakes_{false};
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_WORKER_WAKEUPS_H_
