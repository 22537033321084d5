// WorkerInit (src/loader/worker_init.h): worker_init runs on a worker before
// it loads (through ThreadLoadBackend::StartWorker), a failure reaches the consumer as WorkerInitError on every
// Next(), and an epoch whose batches are all out waits for the worker_inits
// that still run (Scheduler::WorkerInitPendingLocked). The test plays the
// workers: it calls Run for each worker id itself, on a scheduler whose
// worker pool only records that it was started.
#include "src/loader/worker_init.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "feedline/loader_options.h"
#include "feedline/sampler.h"
#include "src/core/mutex.h"
#include "src/loader/scheduler.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/thread_load_backend.h"
#include "src/loader/worker_pool.h"
#include "loader/recorded_workers.h"
#include "loader/test_datasets.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

// A scheduler of two workers over 8 samples in batches of 4, with
// `worker_init`, its workers attached and an epoch started.
class TwoWorkers {
 public:
  explicit TwoWorkers(std::function<void(int)> worker_init)
      : options_(Options(std::move(worker_init))),
        dataset_(8),
        backend_(&dataset_, options_.worker_init),
        stats_(options_.num_workers),
        scheduler_(options_,
                   std::make_shared<FixedBatchSampler>(std::make_shared<SequentialSampler>(8), 4,
                                                       false),
                   &dataset_, &backend_, &layout_, 4, &stats_),
        workers_(&scheduler_.mu(), options_.num_workers),
        init_(&backend_, &scheduler_) {
    scheduler_.AttachWorkers(&workers_);
    PlannedEpoch planned = scheduler_.PlanEpoch(0);
    MutexLock lock(&scheduler_.mu());
    scheduler_.StartEpochLocked(std::move(planned), 0);
  }

  bool Run(int worker) { return init_.Run(worker); }
  bool Pending() {
    MutexLock lock(&scheduler_.mu());
    return scheduler_.WorkerInitPendingLocked();
  }
  void ThrowPending() {
    MutexLock lock(&scheduler_.mu());
    scheduler_.ThrowPendingLocked();
  }

 private:
  static LoaderOptions Options(std::function<void(int)> worker_init) {
    LoaderOptions options;
    options.batch_size = 4;
    options.num_workers = 2;
    options.worker_init = std::move(worker_init);
    return options;
  }

  const LoaderOptions options_;
  testing::IndexDataset dataset_;
  ThreadLoadBackend backend_;
  SlotLayout layout_;
  StatsCollector stats_;
  Scheduler scheduler_;
  testing::RecordedWorkers workers_;
  WorkerInit init_;
};

TEST(WorkerInit, RunsOnEachWorkerAndTheEpochWaitsUntilAllReturned) {
  std::vector<int> ran;
  TwoWorkers workers([&ran](int worker) { ran.push_back(worker); });
  EXPECT_TRUE(workers.Pending());  // both still to run
  EXPECT_TRUE(workers.Run(1));
  EXPECT_TRUE(workers.Pending());  // worker 0's still runs
  EXPECT_TRUE(workers.Run(0));
  EXPECT_FALSE(workers.Pending());
  EXPECT_EQ(ran, (std::vector<int>{1, 0}));
  EXPECT_NO_THROW(workers.ThrowPending());
}

TEST(WorkerInit, AFailureIsRaisedAsWorkerInitErrorOnEveryCall) {
  TwoWorkers workers([](int worker) {
    if (worker == 1) throw std::runtime_error("no GPU for worker 1");
  });
  EXPECT_TRUE(workers.Run(0));
  EXPECT_FALSE(workers.Run(1));
  EXPECT_FALSE(workers.Pending());  // a failed worker_init has returned too
  for (int call = 0; call < 2; ++call) {
    try {
      workers.ThrowPending();
      FAIL() << "no WorkerInitError";
    } catch (const WorkerInitError& e) {
      EXPECT_EQ(e.worker(), 1);
      EXPECT_THAT(e.what(), HasSubstr("no GPU for worker 1"));
    }
  }
}

TEST(WorkerInit, WithoutOneNothingRunsAndNothingIsPending) {
  TwoWorkers workers(nullptr);
  EXPECT_FALSE(workers.Pending());
  EXPECT_TRUE(workers.Run(0));
  EXPECT_NO_THROW(workers.ThrowPending());
}

}  // namespace
}  // namespace feedline::internal
