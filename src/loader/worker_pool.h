// WorkerPool: the workers that load batches for the Scheduler, and the
// lanes through which the engine watches what each one is loading.
//
// The scheduler decides what is loaded (it hands out row ranges, "tasks");
// a worker pool decides who runs the loading: ThreadWorkerPool runs each
// worker as a thread of this process (thread_worker_pool.h); a pool of
// worker processes can sit behind the same scheduler with the same
// interface. A pool starts and stops its workers, and gives up on a worker
// stuck in a sample past the loader's timeout, putting a fresh one in its
// place.
//
// Thread safety: every *Locked function is called with the scheduler's
// mutex held (the pool's state is guarded by it); a lane's record of its
// current load has its own mutex, taken per sample only with a timeout.
#ifndef FEEDLINE_SRC_LOADER_WORKER_POOL_H_
#define FEEDLINE_SRC_LOADER_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/slot.h"

namespace feedline::internal {

// A worker's place ("lane"): what it is loading now, for the timeout check.
// A pool has 2 * num_workers lanes: a worker stuck in a sample past the
// timeout is retired and a replacement takes a free lane, so at most
// num_workers workers are ever stuck at once.
struct WorkerLane {
  Mutex mu;  // taken per sample only with a timeout
  Slot* slot GUARDED_BY(mu) = nullptr;
  int64_t row GUARDED_BY(mu) = -1;
  int64_t index GUARDED_BY(mu) = -1;
  int attempt GUARDED_BY(mu) = 0;         // 0: the planned sample; k: its k-th substitute
  int64_t since_ns GUARDED_BY(mu) = -1;   // -1: not loading
  bool abandoned GUARDED_BY(mu) = false;  // the consumer gave up on this load
  // Set when the worker on this lane was given up on: it exits once its
  // sample returns.
  std::atomic<bool> retired{false};
};

// A load that ran past the timeout, given up on by AbandonLateLoadsLocked.
struct LateLoad {
  Slot* slot = nullptr;
  int64_t row = -1;
  int attempt = 0;
};

class WorkerPool {
 public:
  // What a worker runs: loads tasks until the pool stops it (stopping) or
  // its lane is retired. Called on the worker with no lock held.
  using Body = std::function<void(int worker, WorkerLane& lane)>;

  // `mu`: the scheduler's mutex, which guards the pool's state too.
  explicit WorkerPool(Mutex* mu) : mu_(mu) {}
  virtual ~WorkerPool() = default;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  Mutex& mu() const RETURN_CAPABILITY(*mu_) { return *mu_; }

  // The workers the pool runs (num_workers).
  virtual int size() const = 0;
  // Starts the workers if they are not running.
  virtual void StartLocked() REQUIRES(mu()) = 0;
  // Stops the workers and waits until they have left their body (releasing
  // the mutex while it waits). Workers stopped in a sample past the timeout
  // are waited for by the destructor.
  virtual void StopLocked() REQUIRES(mu()) = 0;
  virtual bool started_locked() const REQUIRES(mu()) = 0;
  // True while workers must leave their body: StopLocked or Shutdown.
  virtual bool stopping_locked() const REQUIRES(mu()) = 0;
  // The loader is going away: stops the workers for good.
  virtual void ShutdownLocked() REQUIRES(mu()) = 0;
  // After ShutdownLocked: waits for the workers given up on after a
  // timeout, which may still be inside their sample (a thread cannot be
  // interrupted). The engine calls it before anything they use goes.
  virtual void JoinRetired() EXCLUDES(mu()) = 0;
  // Read without the lock by workers between samples.
  virtual bool shutting_down() const = 0;
  // Gives up on loads of `generation` that started more than `limit_ns`
  // before `now_ns`: their lanes are marked abandoned (the late result is
  // discarded), `on_late` is called once per slot that must be bound again,
  // and the stuck worker is replaced by a fresh one when a lane is free.
  virtual void AbandonLateLoadsLocked(int64_t now_ns, int64_t limit_ns, uint64_t generation,
                                      const std::function<void(const LateLoad&)>& on_late)
      REQUIRES(mu()) = 0;

 private:
  Mutex* const mu_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_WORKER_POOL_H_
