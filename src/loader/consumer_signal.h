// ConsumerSignal: what the consumer waits for, and what it is told when
// iteration must end.
//
// Every event the consumer may wait for (a batch ready, a stream ended, a
// worker failing) bumps a progress counter under the scheduler's mutex; the
// consumer waits for it to move. Two failures end iteration: a worker that
// cannot start (worker_init failed: every Next() rethrows it) and an
// interrupt (Python's KeyboardInterrupt, std::bad_alloc: rethrown once).
//
// Thread safety: a part of the Scheduler, guarded by its mutex and reached
// through Scheduler::consumer_locked(); the counter is atomic because Wait
// polls it with the mutex released.
#ifndef FEEDLINE_SRC_LOADER_CONSUMER_SIGNAL_H_
#define FEEDLINE_SRC_LOADER_CONSUMER_SIGNAL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>

#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"

namespace feedline::internal {

class ConsumerSignal {
 public:
  using Clock = std::chrono::steady_clock;

  // Waits (releasing `mu`) until the counter moves, `wake_after` passes or
  // `deadline` passes. Polls briefly first, yielding the core: a batch
  // usually completes within microseconds of the last, and the poll spares
  // the futex sleep and the wake-up a worker would have to send.
  void Wait(Mutex& mu, std::optional<Clock::time_point> deadline,
            std::optional<std::chrono::milliseconds> wake_after) REQUIRES(mu);
  // Bumps the counter and wakes every waiter.
  void Notify();
  // A batch is ready: bumps the counter; true if the consumer waits, to be
  // woken through ready_cv() once the mutex is released (a consumer woken
  // under it would only wait for it again).
  bool MarkReady();
  CondVar& ready_cv() { return ready_cv_; }

  // A worker cannot start: every ThrowPending rethrows `error`.
  void Fail(std::exception_ptr error);
  // Records an interrupt, unless one is already waiting to be rethrown.
  void SetInterrupt(std::exception_ptr error);
  // Rethrows a worker failure (every time), or (once) an interrupt.
  void ThrowPending();
  // Rethrows (once) an interrupt.
  void ThrowInterrupt();
  void ClearInterrupt() { interrupt_ = nullptr; }

 private:
  // Bumped (under the mutex) by every event the consumer may wait for.
  std::atomic<uint64_t> progress_{0};
  // The consumer waits here for progress_ to move; counted so that workers
  // notify only when it waits.
  CondVar ready_cv_;
  int consumer_waiting_ = 0;
  std::exception_ptr fatal_;      // a worker_init failure
  std::exception_ptr interrupt_;  // rethrown once by the consumer
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_CONSUMER_SIGNAL_H_
