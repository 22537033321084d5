// MapWorkerLoop: what a map-style worker runs. It claims rows from the
// Scheduler (NextTaskLocked), loads them without the lock through the
// BatchFiller, which records what they cost, until the workers stop or its
// lane is retired after a timeout.
//
// Thread safety: Run is called by each worker, without the lock; the loop
// keeps no state of its own between workers.
#ifndef FEEDLINE_SRC_LOADER_MAP_WORKER_LOOP_H_
#define FEEDLINE_SRC_LOADER_MAP_WORKER_LOOP_H_

#include "feedline/loader_options.h"
#include "src/core/thread_annotations.h"
#include "src/loader/batch_filler.h"
#include "src/loader/scheduler.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class MapWorkerLoop {
 public:
  // Everything passed must outlive the loop.
  MapWorkerLoop(const LoaderOptions& options, Scheduler* scheduler, BatchFiller* filler)
      : options_(options), scheduler_(scheduler), filler_(filler) {}

  void Run(int worker, WorkerLane& lane) EXCLUDES(scheduler_->mu());

 private:
  const LoaderOptions& options_;
  Scheduler* const scheduler_;
  BatchFiller* const filler_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_MAP_WORKER_LOOP_H_
