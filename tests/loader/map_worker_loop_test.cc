// MapWorkerLoop (src/loader/map_worker_loop.h): what a map-style worker
// runs. One worker thread runs the loop while the test plays the consumer
// through the Scheduler; the loop claims and loads every batch, counts its
// rows in the statistics, and returns once the workers are stopped. The
// worker pool is the test's: it runs no thread, only says whether the
// workers were stopped.
#include "src/loader/map_worker_loop.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/loader_options.h"
#include "feedline/sampler.h"
#include "src/core/mutex.h"
#include "src/loader/batch_filler.h"
#include "src/loader/error_policy.h"
#include "src/loader/scheduler.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/thread_load_backend.h"
#include "src/loader/worker_pool.h"
#include "loader/recorded_workers.h"
#include "loader/test_datasets.h"

namespace feedline::internal {
namespace {

LoaderOptions OneWorker() {
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 1;
  return options;
}

TEST(MapWorkerLoop, LoadsEveryBatchCountsItsRowsAndReturnsOnceStopped) {
  const LoaderOptions options = OneWorker();
  testing::IndexDataset dataset(10);
  ThreadLoadBackend backend(&dataset);
  SlotLayout layout;
  FailurePolicy failure_policy(options, &dataset);
  StatsCollector stats(options.num_workers);
  Scheduler scheduler(options,
                      std::make_shared<FixedBatchSampler>(std::make_shared<SequentialSampler>(10),
                                                          4, false),
                      &dataset, &backend, &layout, 2, &stats);
  BatchFiller filler(options, &dataset, &backend, &layout, &failure_policy, &scheduler, &stats);
  testing::RecordedWorkers workers(&scheduler.mu());
  scheduler.AttachWorkers(&workers);
  MapWorkerLoop loop(options, &scheduler, &filler);
  {
    PlannedEpoch planned = scheduler.PlanEpoch(0);
    MutexLock lock(&scheduler.mu());
    scheduler.StartEpochLocked(std::move(planned), 0);
  }
  WorkerLane lane;
  std::thread worker([&] { loop.Run(0, lane); });

  std::vector<int64_t> first_rows;
  {
    MutexLock lock(&scheduler.mu());
    while (!scheduler.AllDeliveredLocked()) {
      if (Slot* slot = scheduler.TakeReadyLocked()) {
        std::optional<Batch> batch = scheduler.DeliverLocked(slot);
        if (!batch) {
          ADD_FAILURE() << "an empty batch";
          break;
        }
        first_rows.push_back(batch->indices().front());
        MutexUnlock unlock(&scheduler.mu());
        batch.reset();  // its slot goes back, and wakes the worker
        continue;
      }
      scheduler.WaitForBatchLocked(std::nullopt);
    }
    scheduler.FinishEpochLocked(/*stop_workers=*/true);
  }
  scheduler.WakeWorkers();  // the stop is seen by the waiting worker
  worker.join();
  EXPECT_EQ(first_rows, (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(stats.Snapshot().workers.at(0).samples, 10);
}

}  // namespace
}  // namespace feedline::internal
