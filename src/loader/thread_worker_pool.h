// ThreadWorkerPool: a WorkerPool whose workers are threads of this process.
//
// Each worker thread runs on a lane (worker_pool.h). A thread stuck in a
// sample past the timeout cannot be interrupted: it is retired (it leaves
// once its sample returns) and a replacement thread takes a free lane for
// the same worker id; a retired thread is joined once its lane is free
// again (reaped when the next thread starts) or by JoinRetired.
#ifndef FEEDLINE_SRC_LOADER_THREAD_WORKER_POOL_H_
#define FEEDLINE_SRC_LOADER_THREAD_WORKER_POOL_H_

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "src/core/thread_annotations.h"
#include "src/core/mutex.h"
#include "src/loader/worker_pool.h"
#include "src/loader/worker_wakeups.h"

namespace feedline::internal {

class ThreadWorkerPool final : public WorkerPool {
 public:
  // `num_workers` threads (at least 1) run `body`; `mu` is the scheduler's
  // mutex, and workers wait on `wakeups` for work and are woken through it
  // when they must stop. Both must outlive this object.
  ThreadWorkerPool(Mutex* mu, WorkerWakeups* wakeups, int num_workers, Body body);
  ~ThreadWorkerPool() override;

  // The lane `lane` (0 .. 2 * num_workers - 1), for the body's tracking.
  WorkerLane& lane(int lane) { return lanes_[static_cast<size_t>(lane)]; }

  int size() const override { return num_workers_; }
  void StartLocked() override REQUIRES(mu());
  void StopLocked() override REQUIRES(mu());
  bool started_locked() const override REQUIRES(mu()) { return !threads_.empty(); }
  bool stopping_locked() const override REQUIRES(mu()) { return stop_ || shutdown_.load(); }
  void ShutdownLocked() override REQUIRES(mu());
  bool shutting_down() const override { return shutdown_.load(); }
  void JoinRetired() override EXCLUDES(mu());
  void AbandonLateLoadsLocked(int64_t now_ns, int64_t limit_ns, uint64_t generation,
                              const std::function<void(const LateLoad&)>& on_late) override
      REQUIRES(mu());

 private:
  // Which thread runs on a lane.
  struct LaneThread {
    bool live = false;  // a thread runs on this lane
    int worker = -1;    // the worker id that thread serves
    std::thread::id id;
  };

  // Starts a thread for `worker` on a free lane; false if none is free.
  bool StartThreadLocked(int worker) REQUIRES(mu());
  // Joins retired threads whose sample has returned.
  void ReapRetiredLocked() REQUIRES(mu());
  // The thread: the body, then frees its lane.
  void Run(int worker, int lane) EXCLUDES(mu());

  WorkerWakeups* const wakeups_;
  const int num_workers_;
  const Body body_;
  std::unique_ptr<WorkerLane[]> lanes_;  // 2 * num_workers; fixed addresses
  std::vector<LaneThread> lane_threads_ GUARDED_BY(mu());
  std::vector<std::thread> threads_ GUARDED_BY(mu());
  // Threads retired after a timeout, still inside their sample: (lane, thread).
  std::vector<std::pair<int, std::thread>> retired_ GUARDED_BY(mu());
  bool stop_ GUARDED_BY(mu()) = false;
  std::atomic<bool> shutdown_{false};
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_THREAD_WORKER_POOL_H_
