// ThreadWorkerPool: runs the body on num_workers threads, stops them through
// the wake-ups, and replaces a thread stuck in a sample past the timeout by a
// fresh one on a free lane, joining the stuck one once its sample returns.
#include "src/loader/thread_worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "src/core/mutex.h"
#include "src/loader/slot.h"
#include "src/loader/worker_wakeups.h"

namespace feedline::internal {
namespace {

using std::chrono::milliseconds;

// A pool whose workers record where they run and wait until stopped; with
// `stuck_first`, the first thread started is stuck in a "sample" until
// ReturnStuckSample.
class PoolHarness {
 public:
  explicit PoolHarness(int num_workers, bool stuck_first = false)
      : stuck_(stuck_first),
        sample_returns_(returned_.get_future().share()),
        pool_(std::make_unique<ThreadWorkerPool>(
            &mu, &wakeups, num_workers,
            [this](int worker, WorkerLane& lane) { Body(worker, lane); })) {}
  ~PoolHarness() {
    ReturnStuckSample();
    {
      MutexLock lock(&mu);
      pool_->ShutdownLocked();
    }
    pool_->JoinRetired();
  }

  ThreadWorkerPool& pool() { return *pool_; }
  void Start() {
    MutexLock lock(&mu);
    pool_->StartLocked();
  }
  void Stop() {
    MutexLock lock(&mu);
    pool_->StopLocked();
  }
  // Waits until `n` bodies have started (a failure after 10 s).
  void AwaitStarts(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    MutexLock lock(&mu);
    while (starts_.size() < n) {
      if (!started_cv_.WaitUntil(&mu, deadline) && starts_.size() < n) {
        ADD_FAILURE() << "only " << starts_.size() << " of " << n << " workers started";
        return;
      }
    }
  }
  void ReturnStuckSample() {
    if (!returned_set_.exchange(true)) returned_.set_value();
  }
  struct Started {
    int worker;
    WorkerLane* lane;
  };
  std::vector<Started> starts() {
    MutexLock lock(&mu);
    return starts_;
  }
  int running() const { return running_.load(); }

  Mutex mu;
  WorkerWakeups wakeups;

 private:
  void Body(int worker, WorkerLane& lane) {
    running_.fetch_add(1);
    bool stuck = false;
    {
      MutexLock lock(&mu);
      starts_.push_back({worker, &lane});
      stuck = stuck_ && starts_.size() == 1;
      started_cv_.NotifyAll();
    }
    if (stuck) {
      sample_returns_.wait();  // no lock held, as in a sample
    } else {
      MutexLock lock(&mu);
      while (!pool_->stopping_locked()) wakeups.Wait(mu);
    }
    running_.fetch_sub(1);
  }

  const bool stuck_;
  std::promise<void> returned_;
  std::atomic<bool> returned_set_{false};
  std::shared_future<void> sample_returns_;
  CondVar started_cv_;
  std::vector<Started> starts_;
  std::atomic<int> running_{0};
  std::unique_ptr<ThreadWorkerPool> pool_;
};

TEST(ThreadWorkerPoolTest, RunsOneThreadPerWorkerEachOnItsOwnLane) {
  PoolHarness h(3);
  EXPECT_EQ(h.pool().size(), 3);
  {
    MutexLock lock(&h.mu);
    EXPECT_FALSE(h.pool().started_locked());
  }
  h.Start();
  h.AwaitStarts(3);
  std::set<int> workers;
  std::set<WorkerLane*> lanes;
  for (const auto& start : h.starts()) {
    workers.insert(start.worker);
    lanes.insert(start.lane);
  }
  EXPECT_EQ(workers, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(lanes.size(), 3u);
  {
    MutexLock lock(&h.mu);
    EXPECT_TRUE(h.pool().started_locked());
    EXPECT_FALSE(h.pool().stopping_locked());
    h.pool().StartLocked();  // already running: nothing more starts
  }
  std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(h.starts().size(), 3u);
}

TEST(ThreadWorkerPoolTest, AtLeastOneWorker) {
  PoolHarness h(0);
  EXPECT_EQ(h.pool().size(), 1);
  h.Start();
  h.AwaitStarts(1);
}

TEST(ThreadWorkerPoolTest, StopWaitsUntilEveryWorkerLeftItsBodyAndCanStartAgain) {
  PoolHarness h(2);
  h.Start();
  h.AwaitStarts(2);
  h.Stop();
  EXPECT_EQ(h.running(), 0);
  {
    MutexLock lock(&h.mu);
    EXPECT_FALSE(h.pool().started_locked());
    EXPECT_FALSE(h.pool().stopping_locked()) << "a stopped pool may start again";
  }
  h.Start();
  h.AwaitStarts(4);
  h.Stop();
  EXPECT_EQ(h.running(), 0);
}

TEST(ThreadWorkerPoolTest, AShutDownPoolStopsForGood) {
  PoolHarness h(2);
  h.Start();
  h.AwaitStarts(2);
  {
    MutexLock lock(&h.mu);
    h.pool().ShutdownLocked();
    EXPECT_TRUE(h.pool().stopping_locked());
    EXPECT_FALSE(h.pool().started_locked());
  }
  EXPECT_TRUE(h.pool().shutting_down());
  EXPECT_EQ(h.running(), 0);
  h.Start();
  std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(h.starts().size(), 2u) << "no worker starts after the shutdown";
}

// Lane `lane` loads row `row` of `slot` since time 0.
void Loading(WorkerLane& lane, Slot* slot, int64_t row) {
  MutexLock lock(&lane.mu);
  lane.slot = slot;
  lane.row = row;
  lane.attempt = 1;
  lane.since_ns = 0;
}

TEST(ThreadWorkerPoolTest, ALateLoadIsAbandonedAndItsWorkerReplaced) {
  PoolHarness h(1, /*stuck_first=*/true);
  h.Start();
  h.AwaitStarts(1);
  WorkerLane& stuck_lane = *h.starts()[0].lane;
  Slot slot;
  slot.generation = 5;
  Loading(stuck_lane, &slot, 2);
  std::vector<LateLoad> late;
  auto on_late = [&](const LateLoad& load) { late.push_back(load); };
  {
    MutexLock lock(&h.mu);
    // Not late yet, and a load of another epoch run: left alone.
    h.pool().AbandonLateLoadsLocked(100, 1000, 5, on_late);
    h.pool().AbandonLateLoadsLocked(5000, 1000, 4, on_late);
  }
  EXPECT_TRUE(late.empty());
  {
    MutexLock lock(&h.mu);
    h.pool().AbandonLateLoadsLocked(5000, 1000, 5, on_late);
  }
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].slot, &slot);
  EXPECT_EQ(late[0].row, 2);
  EXPECT_EQ(late[0].attempt, 1);
  EXPECT_TRUE(slot.orphaned.load());
  EXPECT_TRUE(stuck_lane.retired.load());
  {
    MutexLock lock(&stuck_lane.mu);
    EXPECT_TRUE(stuck_lane.abandoned);
  }
  // A fresh thread for the same worker, on another lane.
  h.AwaitStarts(2);
  ASSERT_EQ(h.starts().size(), 2u);
  EXPECT_EQ(h.starts()[1].worker, 0);
  EXPECT_NE(h.starts()[1].lane, &stuck_lane);
  EXPECT_EQ(h.running(), 2);
  {
    MutexLock lock(&h.mu);
    h.pool().AbandonLateLoadsLocked(9000, 1000, 5, on_late);  // given up on already
  }
  EXPECT_EQ(late.size(), 1u);
  // Stopping does not wait for the stuck thread; JoinRetired does.
  h.Stop();
  EXPECT_EQ(h.running(), 1);
  std::atomic<bool> joined{false};
  std::thread joiner([&] {
    h.pool().JoinRetired();
    joined = true;
  });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(joined.load()) << "the stuck sample has not returned";
  h.ReturnStuckSample();
  joiner.join();
  EXPECT_TRUE(joined.load());
  EXPECT_EQ(h.running(), 0);
}

TEST(ThreadWorkerPoolTest, ASlotBoundAgainAlreadyIsNotReportedTwice) {
  PoolHarness h(1, /*stuck_first=*/true);
  h.Start();
  h.AwaitStarts(1);
  Slot slot;
  slot.orphaned = true;  // another row's late load gave it up already
  Loading(*h.starts()[0].lane, &slot, 0);
  int calls = 0;
  {
    MutexLock lock(&h.mu);
    h.pool().AbandonLateLoadsLocked(5000, 1000, 0, [&](const LateLoad&) { ++calls; });
  }
  EXPECT_EQ(calls, 0);
  h.AwaitStarts(2);  // the stuck worker is replaced all the same
}

TEST(ThreadWorkerPoolTest, TheDestructorStopsWorkersItsOwnerLeftRunning) {
  std::atomic<int> left{0};
  Mutex mu;
  WorkerWakeups wakeups;
  {
    ThreadWorkerPool* self = nullptr;
    auto pool = std::make_unique<ThreadWorkerPool>(&mu, &wakeups, 2, [&](int, WorkerLane&) {
      MutexLock lock(&mu);
      while (!self->stopping_locked()) wakeups.Wait(mu);
      left.fetch_add(1);
    });
    self = pool.get();
    MutexLock lock(&mu);
    pool->StartLocked();
  }
  EXPECT_EQ(left.load(), 2);
}

}  // namespace
}  // namespace feedline::internal
