// MapConsumerLoop: the consumer's side of map-style loading, what Next()
// and TryNext() run. It takes the batches in order from the Scheduler and
// waits for them; with num_workers = 0 it loads them itself, in this
// thread; with workers, a consumer that would wait for cheap rows loads a
// chunk of them under the id of a worker that waits for work
// (Scheduler::LendWaitingWorkerLocked) instead of sleeping.
//
// Thread safety: Next is called by the one consumer thread; the loop's
// state is the consumer's (and the cost it measured is guarded by the
// scheduler's mutex).
#ifndef FEEDLINE_SRC_LOADER_MAP_CONSUMER_LOOP_H_
#define FEEDLINE_SRC_LOADER_MAP_CONSUMER_LOOP_H_

#include <memory>
#include <optional>
#include <vector>

#include "feedline/batch.h"
#include "feedline/loader_options.h"
#include "feedline/sample_context.h"
#include "src/core/thread_annotations.h"
#include "src/loader/batch_filler.h"
#include "src/loader/scheduler.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class MapConsumerLoop {
 public:
  using Clock = Scheduler::Clock;

  // Everything passed must outlive the loop. `lend_workers`: the consumer
  // may load rows as a waiting worker (thread workers, without a timeout,
  // a worker_init or batches owned by workers).
  MapConsumerLoop(const LoaderOptions& options, Scheduler* scheduler, BatchFiller* filler,
                  StatsCollector* stats, bool lend_workers);

  // The next batch; starts an epoch if none runs. nullopt at the end of the
  // epoch, or (with *pending set) when `deadline` passed first.
  std::optional<Batch> Next(std::optional<Clock::time_point> deadline, bool* pending)
      EXCLUDES(scheduler_->mu());

 private:
  // num_workers = 0: loads a chunk of the next batch in this thread (with a
  // deadline, a short one, so that TryNext returns in time). False if the
  // deadline passed first.
  bool LoadInCallerLocked(std::optional<Clock::time_point> deadline) REQUIRES(scheduler_->mu());
  // Instead of waiting: loads a chunk of rows as a waiting worker, when
  // rows are cheap and there is work to claim. True if it did.
  bool LoadWhileWaitingLocked() REQUIRES(scheduler_->mu());

  const LoaderOptions& options_;
  Scheduler* const scheduler_;
  BatchFiller* const filler_;
  StatsCollector* const stats_;
  const bool lend_workers_;
  // The caller's thread (num_workers = 0): its context keeps its scratch
  // buffers from batch to batch, and its lane is nobody's to watch.
  SampleContext caller_ctx_;
  WorkerLane caller_lane_;
  // A context per worker id the consumer may borrow.
  std::vector<std::unique_ptr<SampleContext>> lent_contexts_;
  // num_workers = 0: moving average of the caller's cost per row.
  double caller_ns_per_row_ GUARDED_BY(scheduler_->mu()) = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_MAP_CONSUMER_LOOP_H_
