// WorkerInit: runs LoaderOptions::worker_init on a worker before it loads
// anything, as torch runs worker_init_fn, and tells the consumer when it
// fails: every Next() then raises WorkerInitError (or the interrupt that
// escaped it, a KeyboardInterrupt, as it is).
//
// Thread safety: Run is called by the workers, without the lock; it takes
// the scheduler's to record the outcome.
#ifndef FEEDLINE_SRC_LOADER_WORKER_INIT_H_
#define FEEDLINE_SRC_LOADER_WORKER_INIT_H_

#include "feedline/loader_options.h"
#include "src/core/thread_annotations.h"
#include "src/loader/scheduler.h"

namespace feedline::internal {

class WorkerInit {
 public:
  // Both must outlive it.
  WorkerInit(const LoaderOptions& options, Scheduler* scheduler)
      : options_(options), scheduler_(scheduler) {}

  // Runs worker_init for `worker` (if any); false if it failed, and the
  // consumer was told.
  bool Run(int worker) EXCLUDES(scheduler_->mu());

 private:
  const LoaderOptions& options_;
  Scheduler* const scheduler_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_WORKER_INIT_H_
