// RecordedWorkers: a WorkerPool that runs nobody and only records whether it
// was started, for the tests that play the workers themselves (they call
// the worker loop or worker_init on their own thread) on a Scheduler that
// needs a pool attached to start and stop.
#ifndef FEEDLINE_TESTS_LOADER_RECORDED_WORKERS_H_
#define FEEDLINE_TESTS_LOADER_RECORDED_WORKERS_H_

#include <cstdint>
#include <functional>

#include "src/core/mutex.h"
#include "src/loader/worker_pool.h"

namespace feedline::testing {

class RecordedWorkers : public internal::WorkerPool {
 public:
  // `mu`: the scheduler's; `n`: the workers it says it has.
  explicit RecordedWorkers(internal::Mutex* mu, int n = 1) : WorkerPool(mu), n_(n) {}
  int size() const override { return n_; }
  void StartLocked() override { started_ = true; }
  void StopLocked() override { started_ = false; }
  bool started_locked() const override { return started_; }
  // A worker loop played by the test returns once the pool is stopped.
  bool stopping_locked() const override { return !started_; }
  void ShutdownLocked() override { started_ = false; }
  void JoinRetired() override {}
  bool shutting_down() const override { return false; }
  void AbandonLateLoadsLocked(int64_t, int64_t, uint64_t,
                              const std::function<void(const internal::LateLoad&)>&) override {}

 private:
  const int n_;
  bool started_ = false;  // under the scheduler's mutex
};

}  // namespace feedline::testing

#endif  // FEEDLINE_TESTS_LOADER_RECORDED_WORKERS_H_
