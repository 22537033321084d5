// MapConsumerLoop (src/loader/map_consumer_loop.h): the consumer's side of
// map-style loading. Without workers it loads each batch in the caller's
// thread and ends the epoch after the last; with a deadline that has passed
// it returns pending, without loading, and the next call goes on where it
// stopped. Built as the Engine builds it (Scheduler, BatchFiller), with
// num_workers = 0, so that the test is the only thread.
#include "src/loader/map_consumer_loop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/loader_options.h"
#include "feedline/sampler.h"
#include "src/loader/batch_filler.h"
#include "src/loader/error_policy.h"
#include "src/loader/scheduler.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/thread_load_backend.h"
#include "loader/test_datasets.h"

namespace feedline::internal {
namespace {

// Ten samples in batches of four (the last of two), loaded in the caller's
// thread.
class CallerLoop {
 public:
  CallerLoop()
      : options_(Options()),
        dataset_(10),
        backend_(&dataset_),
        failure_policy_(options_, &dataset_),
        stats_(options_.num_workers),
        scheduler_(options_,
                   std::make_shared<FixedBatchSampler>(std::make_shared<SequentialSampler>(10), 4,
                                                       false),
                   &dataset_, &backend_, &layout_, 2, &stats_),
        filler_(options_, &dataset_, &backend_, &layout_, &failure_policy_, &scheduler_, &stats_),
        loop_(options_, &scheduler_, &filler_, &stats_, /*lend_workers=*/false) {}

  std::optional<Batch> Next(std::optional<MapConsumerLoop::Clock::time_point> deadline,
                            bool* pending) {
    return loop_.Next(deadline, pending);
  }
  // The indices of a batch's rows.
  static std::vector<int64_t> Indices(const Batch& batch) {
    const Tensor& index = batch["index"];
    const int64_t* data = index.data<int64_t>();
    return std::vector<int64_t>(data, data + batch.size());
  }

 private:
  static LoaderOptions Options() {
    LoaderOptions options;
    options.batch_size = 4;
    return options;
  }

  const LoaderOptions options_;
  testing::IndexDataset dataset_;
  ThreadLoadBackend backend_;
  SlotLayout layout_;
  FailurePolicy failure_policy_;
  StatsCollector stats_;
  Scheduler scheduler_;
  BatchFiller filler_;
  MapConsumerLoop loop_;
};

TEST(MapConsumerLoop, LoadsEachBatchInTheCallersThreadInOrderThenEndsTheEpoch) {
  CallerLoop loop;
  std::vector<std::vector<int64_t>> batches;
  bool pending = false;
  while (std::optional<Batch> batch = loop.Next(std::nullopt, &pending)) {
    batches.push_back(CallerLoop::Indices(*batch));
  }
  EXPECT_FALSE(pending);
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  // The next call starts the next epoch, from its first batch.
  std::optional<Batch> first = loop.Next(std::nullopt, &pending);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(CallerLoop::Indices(*first), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(MapConsumerLoop, APassedDeadlineReturnsPendingAndTheNextCallGoesOn) {
  CallerLoop loop;
  bool pending = false;
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  EXPECT_FALSE(loop.Next(past, &pending).has_value());
  EXPECT_TRUE(pending);
  pending = false;
  // With time to spare, the caller loads the batch in slices and gets it.
  const auto later = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::optional<Batch> batch = loop.Next(later, &pending);
  EXPECT_FALSE(pending);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(CallerLoop::Indices(*batch), (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace feedline::internal
