#include "feedline/text/pack_batch_sampler.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "feedline/error.h"

namespace feedline::text {
namespace {

std::shared_ptr<const PackSchedule> Schedule() {
  PackOptions options;
  options.seq_len = 10;
  options.strategy = PackStrategy::kConcatSplit;
  // 95 tokens: 10 rows, the last with 5.
  return std::make_shared<PackSchedule>(std::vector<int64_t>(19, 5),
                                        std::make_shared<SequentialSampler>(19), options);
}

TEST(PackBatchSamplerTest, BatchesTheEpochsRowsInOrder) {
  PackBatchSampler batches(Schedule(), 4, /*drop_last=*/false);
  EXPECT_EQ(batches.size(), 3);
  const EpochPlan plan = batches.Plan(0);
  ASSERT_EQ(plan.num_batches(), 3);
  EXPECT_EQ(plan.batch(2).size(), 2u);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(plan.indices[static_cast<size_t>(i)], i);

  PackBatchSampler dropping(Schedule(), 4, /*drop_last=*/true);
  EXPECT_EQ(dropping.size(), 2);
  EXPECT_EQ(dropping.Plan(0).num_batches(), 2);
}

TEST(PackBatchSamplerTest, RanksTakeEqualStepsAndTogetherAPrefix) {
  // 10 rows, 2 ranks of batch 2: steps of 4 rows, 3 steps, the last filled
  // with rows 0 and 1 again on rank 1.
  PackBatchSampler rank0(Schedule(), 2, false, /*num_replicas=*/2, /*rank=*/0);
  PackBatchSampler rank1(Schedule(), 2, false, 2, 1);
  EXPECT_EQ(rank0.size(), 3);
  EXPECT_EQ(rank0.Plan(0).indices, (std::vector<int64_t>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(rank1.Plan(0).indices, (std::vector<int64_t>{2, 3, 6, 7, 0, 1}));
  EXPECT_EQ(rank0.GlobalPosition(0, 2), 8);
  EXPECT_EQ(rank0.GlobalPosition(0, 3), 10);
  PackBatchSampler dropping(Schedule(), 2, /*drop_last=*/true, 2, 1);
  EXPECT_EQ(dropping.Plan(0).indices, (std::vector<int64_t>{2, 3, 6, 7}));
}

TEST(PackBatchSamplerTest, ResumesAnEpochAfterTheRowsAnotherJobConsumed) {
  // A job of 2 ranks took 1 step (rows 0-3); 3 ranks of batch 1 go on.
  PackBatchSampler rank2(Schedule(), 1, false, 3, 2);
  rank2.ResumeFrom(0, 4);
  EXPECT_EQ(rank2.Plan(0).indices, (std::vector<int64_t>{6, 9}));
  EXPECT_EQ(rank2.GlobalPosition(0, 1), 7);
  EXPECT_EQ(rank2.Plan(1).num_batches(), 4);  // the next epoch is whole
  EXPECT_THROW(rank2.ResumeFrom(0, -1), Error);
}

TEST(PackBatchSamplerTest, BadArgumentsAreRefused) {
  EXPECT_THROW(PackBatchSampler(nullptr, 4, false), Error);
  EXPECT_THROW(PackBatchSampler(Schedule(), 0, false), Error);
  EXPECT_THROW(PackBatchSampler(Schedule(), 1, false, 0, 0), Error);
  EXPECT_THROW(PackBatchSampler(Schedule(), 1, false, 2, 2), IndexError);
}

}  // namespace
}  // namespace feedline::text
