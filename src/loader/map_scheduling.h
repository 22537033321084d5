// MapScheduling: the scheduling of a map-style Dataset (SchedulingMode). The
// workers claim rows of the epoch's planned batches (MapWorkerLoop) and the
// consumer takes the batches in order (MapConsumerLoop).
//
// Thread safety: see SchedulingMode.
#ifndef FEEDLINE_SRC_LOADER_MAP_SCHEDULING_H_
#define FEEDLINE_SRC_LOADER_MAP_SCHEDULING_H_

#include <optional>

#include "feedline/batch.h"
#include "feedline/loader_options.h"
#include "src/loader/batch_filler.h"
#include "src/loader/map_consumer_loop.h"
#include "src/loader/map_worker_loop.h"
#include "src/loader/scheduler.h"
#include "src/loader/scheduling_mode.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class MapScheduling : public SchedulingMode {
 public:
  // Everything passed must outlive it.
  MapScheduling(const LoaderOptions& options, const LoadBackend* backend, Scheduler* scheduler,
                BatchFiller* filler, StatsCollector* stats);

  std::optional<Batch> Next(std::optional<Clock::time_point> deadline, bool* pending) override {
    return consumer_.Next(deadline, pending);
  }
  void Reset() override;
  void RunWorker(int worker, WorkerLane& lane) override { worker_.Run(worker, lane); }

  void SetActiveWorkers(int n) override;
  int active_workers() const override;
  void SetSlotLimit(int n) override;

 private:
  const LoaderOptions& options_;
  Scheduler* const scheduler_;
  MapConsumerLoop consumer_;
  MapWorkerLoop worker_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_MAP_SCHEDULING_H_
