#include "src/loader/map_worker_loop.h"

#include <exception>

#include "feedline/sample_context.h"
#include "src/core/sample_context_access.h"
#include "src/loader/claim_policy.h"
#include "src/loader/exception_kind.h"

namespace feedline::internal {

void MapWorkerLoop::Run(int worker, WorkerLane& lane) {
  SampleContext ctx(options_.seed, 0, 0, worker);
  double ns_per_row = 0;  // moving average of this worker's cost per row
  MutexLock lock(&scheduler_->mu());
  while (true) {
    try {
      Task task;
      bool wake_another = false;
      if (!scheduler_->NextTaskLocked(worker, claim_policy::WorkerChunk(ns_per_row), &task,
                                      &wake_another)) {
        return;  // the workers stop
      }
      // The task runs without the lock; an exception takes it again on the
      // way out, for the handler below.
      MutexUnlock unlock(&scheduler_->mu());
      if (wake_another) scheduler_->WakeAnotherWorker();
      // Read before the rows are done: the slot may be recycled from then on.
      const int64_t batch_rows = task.slot->planned_rows;
      const int64_t elapsed = filler_->RunTask(task, ctx, &lane, worker);
      ns_per_row = claim_policy::UpdatedAverage(ns_per_row, elapsed, task.end - task.begin);
      scheduler_->NoteRowCost(ns_per_row, batch_rows);
      // Retired after a timeout: a replacement already took this worker's place.
      if (lane.retired.load()) return;
    } catch (...) {
      RethrowIfCancellation();
      // std::bad_alloc sizing a slot: the epoch ends and the consumer gets
      // it; this thread stays, for the next epoch.
      scheduler_->InterruptLocked(std::current_exception());
    }
  }
}

}  // namespace feedline::internal
