// WorkerInit: makes a worker ready before it loads anything, through the
// load backend (LoadBackend::StartWorker: LoaderOptions::worker_init on a
// thread, as torch runs worker_init_fn, or a worker process started), and
// tells the consumer when that fails: every Next() then raises what the
// backend threw (WorkerInitError, WorkerStartError, or the interrupt that
// escaped a worker_init, a KeyboardInterrupt, as it is).
//
// Thread safety: Run is called by the workers, without the lock; it takes
// the scheduler's to record the outcome.
#ifndef FEEDLINE_SRC_LOADER_WORKER_INIT_H_
#define FEEDLINE_SRC_LOADER_WORKER_INIT_H_

#include "src/core/thread_annotations.h"
#include "src/loader/load_backend.h"
#include "src/loader/scheduler.h"

namespace feedline::internal {

class WorkerInit {
 public:
  // Both must outlive it.
  WorkerInit(const LoadBackend* backend, Scheduler* scheduler)
      : backend_(backend), scheduler_(scheduler) {}

  // Starts worker `worker` (if the backend starts workers); false if that
  // failed, and the consumer was told.
  bool Run(int worker) EXCLUDES(scheduler_->mu());

 private:
  const LoadBackend* const backend_;
  Scheduler* const scheduler_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_WORKER_INIT_H_
