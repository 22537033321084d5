// WorkerRoster (src/loader/worker_roster.h): active and parked workers,
// waiting ones, and the id lent to the consumer; WorkerWakeups
// (worker_wakeups.h): whom a wake-up reaches.
#include "src/loader/worker_roster.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "src/core/mutex.h"
#include "src/loader/worker_wakeups.h"

namespace feedline::internal {
namespace {

TEST(WorkerRoster, SetActiveClampsToOneToNumWorkersAndParksTheRest) {
  WorkerWakeups wakeups;
  WorkerRoster roster(4, /*interchangeable=*/true, &wakeups);
  EXPECT_EQ(roster.active(), 4);
  EXPECT_FALSE(roster.parked());
  EXPECT_TRUE(wakeups.wake_one_on_release());
  roster.SetActive(2);
  EXPECT_EQ(roster.active(), 2);
  EXPECT_TRUE(roster.parked());
  // A parked worker may be the one a single wake would reach: all wake.
  EXPECT_FALSE(wakeups.wake_one_on_release());
  roster.SetActive(0);
  EXPECT_EQ(roster.active(), 1);
  roster.SetActive(9);
  EXPECT_EQ(roster.active(), 4);
  EXPECT_FALSE(roster.parked());
  EXPECT_TRUE(wakeups.wake_one_on_release());
}

TEST(WorkerRoster, WorkersThatOwnTheirBatchesAreAllWokenByARelease) {
  WorkerWakeups wakeups;
  WorkerRoster roster(2, /*interchangeable=*/false, &wakeups);
  EXPECT_FALSE(wakeups.wake_one_on_release());
  roster.SetActive(2);
  EXPECT_FALSE(wakeups.wake_one_on_release());
}

TEST(WorkerRoster, ReturnSaysWhetherTheLentWorkerWasWokenMeanwhile) {
  WorkerWakeups wakeups;
  WorkerRoster roster(2, true, &wakeups);
  roster.SetWaiting(1, true);
  EXPECT_TRUE(roster.waiting(1));
  roster.Lend(1);
  EXPECT_TRUE(roster.lent(1));
  EXPECT_FALSE(roster.Return(1));  // it slept throughout
  EXPECT_FALSE(roster.lent(1));

  roster.Lend(1);
  roster.SetWaiting(1, false);  // woken while its id was lent
  EXPECT_TRUE(roster.Return(1));
  EXPECT_FALSE(roster.Return(1));  // said once
}

TEST(WorkerWakeups, WakeOneReachesTheWorkerThatWaitsWhicheverItIs) {
  Mutex mu;
  WorkerWakeups wakeups;
  wakeups.SetWorkerCount(3);
  bool go = false;
  double waited_s = 0;
  // Worker 2 waits on its own condition variable, at most 30 s; workers 0
  // and 1 do not wait. A WakeOne sent to one of theirs would be lost, and
  // worker 2 would sleep out its 30 s.
  std::thread worker([&] {
    MutexLock lock(&mu);
    const auto start = std::chrono::steady_clock::now();
    const auto until = start + std::chrono::seconds(30);
    while (!go && std::chrono::steady_clock::now() < until) wakeups.Wait(mu, 2, until);
    waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  {
    MutexLock lock(&mu);
    // Counted under the lock, which it drops only inside the wait.
    while (!wakeups.AnyWaiting()) {
      MutexUnlock unlock(&mu);
      std::this_thread::yield();
    }
    go = true;
  }
  wakeups.WakeOne();
  worker.join();
  EXPECT_LT(waited_s, 10.0);
}

}  // namespace
}  // namespace feedline::internal
