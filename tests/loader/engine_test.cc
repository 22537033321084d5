// Engine (src/loader/engine.h): an epoch delivers every planned batch, in
// order, for any number of workers (none: the consumer's thread loads);
// abandoning an epoch midway leaves nothing of it in the next; a checkpoint
// taken midway resumes at the batch it names. The promises DataLoader adds
// on top (monitoring, a distributed sampler's global position) are tested
// in data_loader_test.cc and distributed_resume_test.cc.
#include "src/loader/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/loader_options.h"
#include "feedline/loader_state.h"
#include "feedline/sampler.h"
#include "loader/test_datasets.h"

namespace feedline::testing {
namespace {

using internal::Engine;

constexpr int64_t kSamples = 103;
constexpr int64_t kBatchSize = 10;
constexpr uint64_t kSeed = 7;

LoaderOptions Shuffled(int num_workers) {
  LoaderOptions options;
  options.batch_size = kBatchSize;
  options.shuffle = true;
  options.seed = kSeed;
  options.num_workers = num_workers;
  return options;
}

// The plan of `epoch` as the engine draws it for Shuffled() options.
EpochPlan PlanOf(int64_t epoch) {
  FixedBatchSampler sampler(std::make_shared<RandomSampler>(kSamples, kSeed), kBatchSize,
                            /*drop_last=*/false);
  return sampler.Plan(epoch);
}

std::vector<int64_t> Planned(const EpochPlan& plan, int64_t b) {
  const auto rows = plan.batch(b);
  return std::vector<int64_t>(rows.begin(), rows.end());
}

// Takes batches from `engine` to the end of the epoch, checking each against
// batches `first` onwards of `plan`.
void ExpectRestOfEpoch(Engine& engine, const EpochPlan& plan, int64_t epoch, int64_t first) {
  for (int64_t b = first; b < plan.num_batches(); ++b) {
    std::optional<Batch> batch = engine.Next();
    ASSERT_TRUE(batch.has_value()) << "batch " << b << " of epoch " << epoch;
    EXPECT_EQ(batch->epoch(), epoch);
    EXPECT_EQ(batch->index(), b);
    EXPECT_EQ(Indices(*batch), Planned(plan, b)) << "batch " << b << " of epoch " << epoch;
  }
  EXPECT_FALSE(engine.Next().has_value()) << "a batch past the end of epoch " << epoch;
}

class EngineWorkers : public ::testing::TestWithParam<int> {};

TEST_P(EngineWorkers, AnEpochDeliversEveryPlannedBatchInOrder) {
  Engine engine(std::make_shared<IndexDataset>(kSamples), Shuffled(GetParam()));
  const EpochPlan plan = PlanOf(0);
  ASSERT_EQ(plan.num_batches(), 11);
  EXPECT_EQ(engine.size(), plan.num_batches());
  ExpectRestOfEpoch(engine, plan, 0, 0);
  // The next call starts the next epoch.
  ExpectRestOfEpoch(engine, PlanOf(1), 1, 0);
}

TEST_P(EngineWorkers, AbandoningAnEpochMidwayLeavesNothingOfItInTheNext) {
  // Slow enough that workers are loading later batches of epoch 0 when it
  // is abandoned.
  Engine engine(std::make_shared<SlowDataset>(kSamples, std::chrono::milliseconds(1)),
                Shuffled(GetParam()));
  ASSERT_TRUE(engine.Next().has_value());
  ASSERT_TRUE(engine.Next().has_value());
  engine.Reset();
  const LoaderState state = engine.state();
  EXPECT_EQ(state.epoch, 1);
  EXPECT_EQ(state.next_batch, 0);
  ExpectRestOfEpoch(engine, PlanOf(1), 1, 0);
}

TEST_P(EngineWorkers, ACheckpointTakenMidwayResumesAtTheBatchItNames) {
  LoaderState state;
  {
    Engine first(std::make_shared<IndexDataset>(kSamples), Shuffled(GetParam()));
    for (int b = 0; b < 4; ++b) ASSERT_TRUE(first.Next().has_value());
    state = first.state();
  }
  EXPECT_EQ(state.epoch, 0);
  EXPECT_EQ(state.next_batch, 4);
  Engine resumed(std::make_shared<IndexDataset>(kSamples), Shuffled(GetParam()));
  resumed.Restore(state);
  ExpectRestOfEpoch(resumed, PlanOf(0), 0, 4);
}

INSTANTIATE_TEST_SUITE_P(Workers, EngineWorkers, ::testing::Values(0, 1, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "Workers";
                         });

}  // namespace
}  // namespace feedline::testing
