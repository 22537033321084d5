#include "src/loader/thread_worker_pool.h"

#include <algorithm>
#include <cstddef>

namespace feedline::internal {

ThreadWorkerPool::ThreadWorkerPool(Mutex* mu, WorkerWakeups* wakeups, int num_workers, Body body)
    : WorkerPool(mu),
      wakeups_(wakeups),
      num_workers_(std::max(1, num_workers)),
      body_(std::move(body)),
      lanes_(new WorkerLane[2 * static_cast<size_t>(num_workers_)]),
      lane_threads_(2 * static_cast<size_t>(num_workers_)) {}

ThreadWorkerPool::~ThreadWorkerPool() {
  // The owner called ShutdownLocked and JoinRetired; this catches an owner
  // that did not, rather than destroying joinable threads.
  {
    MutexLock lock(&mu());
    ShutdownLocked();
  }
  JoinRetired();
}

void ThreadWorkerPool::StartLocked() {
  if (!threads_.empty() || shutdown_.load()) return;
  stop_ = false;
  for (int w = 0; w < num_workers_; ++w) StartThreadLocked(w);
}

bool ThreadWorkerPool::StartThreadLocked(int worker) {
  ReapRetiredLocked();
  for (size_t lane = 0; lane < lane_threads_.size(); ++lane) {
    LaneThread& t = lane_threads_[lane];
    if (t.live) continue;
    t.live = true;
    t.worker = worker;
    lanes_[lane].retired.store(false);
    try {
      threads_.emplace_back(&ThreadWorkerPool::Run, this, worker, static_cast<int>(lane));
    } catch (...) {
      t.live = false;
      throw;
    }
    t.id = threads_.back().get_id();
    return true;
  }
  return false;
}

void ThreadWorkerPool::Run(int worker, int lane) {
  body_(worker, lanes_[static_cast<size_t>(lane)]);
  MutexLock lock(&mu());
  lane_threads_[static_cast<size_t>(lane)].live = false;
}

void ThreadWorkerPool::ReapRetiredLocked() {
  for (size_t i = 0; i < retired_.size();) {
    if (lane_threads_[static_cast<size_t>(retired_[i].first)].live) {
      ++i;
      continue;
    }
    // The thread marked its lane free as its last step under the lock: the
    // join does not wait for anything that needs the lock.
    retired_[i].second.join();
    retired_.erase(retired_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void ThreadWorkerPool::StopLocked() {
  if (threads_.empty()) return;
  stop_ = true;
  std::vector<std::thread> threads;
  threads.swap(threads_);
  {
    MutexUnlock unlock(&mu());
    wakeups_->WakeAll();
    for (std::thread& t : threads) t.join();
  }
  stop_ = false;
}

void ThreadWorkerPool::ShutdownLocked() {
  shutdown_.store(true);
  StopLocked();
}

void ThreadWorkerPool::JoinRetired() {
  std::vector<std::pair<int, std::thread>> retired;
  {
    MutexLock lock(&mu());
    retired.swap(retired_);
  }
  // A thread cannot be interrupted: this waits until their samples return.
  for (auto& entry : retired) entry.second.join();
}

void ThreadWorkerPool::AbandonLateLoadsLocked(
    int64_t now_ns, int64_t limit_ns, uint64_t generation,
    const std::function<void(const LateLoad&)>& on_late) {
  for (size_t lane = 0; lane < lane_threads_.size(); ++lane) {
    WorkerLane& b = lanes_[lane];
    LateLoad late;
    bool rebind = false;
    {
      MutexLock guard(&b.mu);
      if (b.since_ns < 0 || b.abandoned || now_ns - b.since_ns <= limit_ns) continue;
      if (b.slot->generation != generation) continue;  // an abandoned epoch's load
      // From here the late load's result is discarded: the worker sees
      // `abandoned` when its sample returns, and its slot is never delivered.
      b.abandoned = true;
      rebind = !b.slot->orphaned.exchange(true);  // else already bound again for another row
      late.slot = b.slot;
      late.row = b.row;
      late.attempt = b.attempt;
    }
    if (rebind) on_late(late);
    // Keep the worker count: the stuck thread exits when its sample returns
    // and a new one takes its place, if a lane is free (at most num_workers
    // threads are stuck at once).
    LaneThread& t = lane_threads_[lane];
    if (t.live && !b.retired.load()) {
      auto it = std::find_if(threads_.begin(), threads_.end(),
                             [&](const std::thread& th) { return th.get_id() == t.id; });
      if (it != threads_.end()) {
        b.retired.store(true);
        retired_.emplace_back(static_cast<int>(lane), std::move(*it));
        threads_.erase(it);
        if (!StartThreadLocked(t.worker)) {
          // No lane free: keep the thread as a worker once its sample returns.
          b.retired.store(false);
          threads_.push_back(std::move(retired_.back().second));
          retired_.pop_back();
        }
      }
    }
  }
}

}  // namespace feedline::internal
