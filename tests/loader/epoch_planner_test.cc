// EpochPlanner (src/loader/epoch_planner.h): an epoch's plan, drawn from the
// batch sampler, and the loader drawing it without its lock: a batch
// sampler that drops the last handle of a batch while it plans (as a Python
// garbage collection does) must not deadlock the loader.
#include "src/loader/epoch_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/sampler.h"
#include "loader/test_datasets.h"
#include "loader/within_seconds.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const BatchSampler> InOrder(int64_t samples, int64_t batch_size) {
  return std::make_shared<FixedBatchSampler>(std::make_shared<SequentialSampler>(samples),
                                             batch_size, /*drop_last=*/false);
}

TEST(EpochPlanner, PlansTheEpochAskedFor) {
  const PlannedEpoch planned = EpochPlanner(InOrder(10, 4), nullptr).Plan(3);
  EXPECT_EQ(planned.epoch, 3);
  EXPECT_EQ(planned.plan.num_batches(), 3);
  EXPECT_EQ(planned.plan.batch(2).size(), 2u);
}

TEST(EpochPlanner, APinnedEpochIsTheOnePlanned) {
  auto sampler = std::make_shared<DistributedBatchSampler>(10, 2, 1, 0);
  sampler->set_epoch(5);
  const EpochPlanner planner(sampler, nullptr);
  EXPECT_EQ(planner.pinned_epoch(), std::optional<int64_t>(5));
  const PlannedEpoch planned = planner.Plan(0);
  EXPECT_EQ(planned.epoch, 5);
  EXPECT_EQ(planned.plan.indices, sampler->Plan(5).indices);
}

// A plan that cannot be held.
class UnplannableBatches : public BatchSampler {
 public:
  int64_t size() const override { return 1; }
  EpochPlan Plan(int64_t) const override { throw std::bad_alloc(); }
};

TEST(EpochPlanner, APlanTooLargeToHoldIsAnErrorNamingTheDatasetsLength) {
  const feedline::testing::IndexDataset dataset(123);
  EXPECT_THAT([&] { EpochPlanner(std::make_shared<UnplannableBatches>(), &dataset).Plan(2); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("the plan of epoch 2 (every index of 123 samples, the dataset's "
                            "length) does not fit in memory")));
}

// Batches of 2 in order, and, while it plans an epoch, drops the batches
// handed to it (Drop), as a Python batch sampler whose iteration runs a
// garbage collection frees the batches of an earlier epoch kept in a
// reference cycle. A batch's release takes the loader's lock.
class DroppingBatches : public BatchSampler {
 public:
  explicit DroppingBatches(int64_t samples) : inner_(InOrder(samples, 2)) {}
  int64_t size() const override { return inner_->size(); }
  EpochPlan Plan(int64_t epoch) const override {
    std::vector<Batch> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dropped.swap(held_);
      ++plans_;
    }
    dropped.clear();  // the last handles: each slot goes back to its pool
    return inner_->Plan(epoch);
  }
  void Drop(Batch batch) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back(std::move(batch));
  }
  int plans() const {
    std::lock_guard<std::mutex> lock(mu_);
    return plans_;
  }

 private:
  const std::shared_ptr<const BatchSampler> inner_;
  mutable std::mutex mu_;
  mutable std::vector<Batch> held_;
  mutable int plans_ = 0;
};

class PlanningWithoutTheLock : public ::testing::TestWithParam<int> {};

TEST_P(PlanningWithoutTheLock, ABatchReleasedWhileTheNextEpochIsPlannedComesBack) {
  auto sampler = std::make_shared<DroppingBatches>(8);
  LoaderOptions options;
  options.batch_sampler = sampler;
  options.num_workers = GetParam();
  DataLoader loader(std::make_shared<feedline::testing::IndexDataset>(8), options);
  feedline::testing::WithinSeconds(60, [&] {
    for (int epoch = 0; epoch < 3; ++epoch) {
      int batches = 0;
      while (std::optional<Batch> batch = loader.Next()) {
        sampler->Drop(std::move(*batch));  // kept until the next plan
        ++batches;
      }
      EXPECT_EQ(batches, 4) << "epoch " << epoch;
    }
    // A restore plans too.
    LoaderState state = loader.state();
    state.next_batch = 1;
    loader.Restore(state);
    int rest = 0;
    while (std::optional<Batch> batch = loader.Next()) {
      sampler->Drop(std::move(*batch));
      ++rest;
    }
    EXPECT_EQ(rest, 3);
  });
  EXPECT_GE(sampler->plans(), 4);
}

INSTANTIATE_TEST_SUITE_P(Workers, PlanningWithoutTheLock, ::testing::Values(0, 2));

}  // namespace
}  // namespace feedline::internal
