// WorkerWakeups: workers wait under the scheduler's mutex, each on its own
// condition variable (map-style) or on a shared one (streams); WakeOne wakes
// the lowest-numbered waiting worker, WakeAll every waiter.
#include "src/loader/worker_wakeups.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "src/core/mutex.h"

namespace feedline::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Map-style workers that wait on their own condition variable until the
// test lets them go; each counts the times its Wait returned.
class Waiters {
 public:
  explicit Waiters(int n) : go_(static_cast<size_t>(n)), in_wait_(n), returns_(n) {
    wakeups.SetWorkerCount(n);
  }
  ~Waiters() {
    {
      MutexLock lock(&mu);
      for (size_t w = 0; w < go_.size(); ++w) go_[w] = true;
    }
    wakeups.WakeAll();
    for (std::thread& t : threads_) t.join();
  }

  // Starts worker `w` and returns once it waits (it marks itself under the
  // mutex, which Wait releases only once it waits).
  void StartWaiting(int w) {
    threads_.emplace_back([this, w] {
      MutexLock lock(&mu);
      in_wait_[w] = true;
      while (!go_[static_cast<size_t>(w)]) {
        wakeups.Wait(mu, w, std::nullopt);
        returns_[w].fetch_add(1);
      }
      in_wait_[w] = false;
    });
    while (true) {
      MutexLock lock(&mu);
      if (in_wait_[w]) return;
    }
  }
  void Let(int w) {
    MutexLock lock(&mu);
    go_[static_cast<size_t>(w)] = true;
  }
  // True once worker `w` has left its wait loop, within a few seconds.
  bool Left(int w) {
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    while (steady_clock::now() < deadline) {
      {
        MutexLock lock(&mu);
        if (!in_wait_[w]) return true;
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    return false;
  }
  int returns(int w) const { return returns_[w].load(); }
  bool any_waiting() {
    MutexLock lock(&mu);
    return wakeups.AnyWaiting();
  }

  Mutex mu;
  WorkerWakeups wakeups;

 private:
  std::vector<bool> go_;
  std::vector<bool> in_wait_;
  std::vector<std::atomic<int>> returns_;
  std::vector<std::thread> threads_;
};

TEST(WorkerWakeupsTest, NobodyWaitsAtFirstAndTheWakeupsAreHarmless) {
  WorkerWakeups wakeups;
  wakeups.SetWorkerCount(3);
  Mutex mu;
  {
    MutexLock lock(&mu);
    EXPECT_FALSE(wakeups.AnyWaiting());
  }
  wakeups.WakeOne();
  wakeups.WakeAll();
}

TEST(WorkerWakeupsTest, AWaitingWorkerIsCountedUntilItLeaves) {
  Waiters waiters(2);
  EXPECT_FALSE(waiters.any_waiting());
  waiters.StartWaiting(1);
  EXPECT_TRUE(waiters.any_waiting());
  waiters.Let(1);
  waiters.wakeups.WakeAll();
  ASSERT_TRUE(waiters.Left(1));
  EXPECT_FALSE(waiters.any_waiting());
}

TEST(WorkerWakeupsTest, WakeOneWakesTheLowestNumberedWaitingWorkerOnly) {
  Waiters waiters(3);
  waiters.StartWaiting(2);
  waiters.StartWaiting(1);
  waiters.Let(1);
  waiters.wakeups.WakeOne();
  ASSERT_TRUE(waiters.Left(1)) << "worker 1 is the lowest-numbered waiter";
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(waiters.returns(2), 0) << "worker 2 was not woken";
  EXPECT_TRUE(waiters.any_waiting());
  // Now worker 2 is the only waiter: WakeOne reaches it.
  waiters.Let(2);
  waiters.wakeups.WakeOne();
  EXPECT_TRUE(waiters.Left(2));
}

TEST(WorkerWakeupsTest, WakeAllWakesEveryWaitingWorker) {
  Waiters waiters(3);
  for (int w = 0; w < 3; ++w) waiters.StartWaiting(w);
  for (int w = 0; w < 3; ++w) waiters.Let(w);
  waiters.wakeups.WakeAll();
  for (int w = 0; w < 3; ++w) EXPECT_TRUE(waiters.Left(w)) << "worker " << w;
}

TEST(WorkerWakeupsTest, AWaitWithADeadlineReturnsByItself) {
  WorkerWakeups wakeups;
  wakeups.SetWorkerCount(1);
  Mutex mu;
  MutexLock lock(&mu);
  const auto start = steady_clock::now();
  wakeups.Wait(mu, 0, start + milliseconds(30));
  EXPECT_GE(steady_clock::now() - start, milliseconds(30));
  EXPECT_FALSE(wakeups.AnyWaiting());
}

TEST(WorkerWakeupsTest, StreamWorkersShareOneConditionVariable) {
  WorkerWakeups wakeups;  // no SetWorkerCount: stream workers only
  Mutex mu;
  bool go = false;
  bool waiting = false;
  std::thread stream_worker([&] {
    MutexLock lock(&mu);
    waiting = true;
    while (!go) wakeups.Wait(mu);
    waiting = false;
  });
  while (true) {
    MutexLock lock(&mu);
    if (waiting) {
      EXPECT_TRUE(wakeups.AnyWaiting());
      go = true;
      break;
    }
  }
  wakeups.WakeOne();  // no map-style waiter: one of the shared condition variable
  stream_worker.join();
  MutexLock lock(&mu);
  EXPECT_FALSE(wakeups.AnyWaiting());
}

TEST(WorkerWakeupsTest, ReleasePoliciesAreOffUntilSet) {
  WorkerWakeups wakeups;
  EXPECT_FALSE(wakeups.wake_one_on_release());
  EXPECT_FALSE(wakeups.batch_release_wakes());
  wakeups.set_wake_one_on_release(true);
  wakeups.set_batch_release_wakes(true);
  EXPECT_TRUE(wakeups.wake_one_on_release());
  EXPECT_TRUE(wakeups.batch_release_wakes());
  wakeups.set_wake_one_on_release(false);
  EXPECT_FALSE(wakeups.wake_one_on_release());
}

}  // namespace
}  // namespace feedline::internal
