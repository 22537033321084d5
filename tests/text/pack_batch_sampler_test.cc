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

TEST(PackBatchSamplerTest, BadArgumentsAreRefused) {
  EXPECT_THROW(PackBatchSampler(nullptr, 4, false), Error);
  EXPECT_THROW(PackBatchSampler(Schedule(), 0, false), Error);
}

}  // namespace
}  // namespace feedline::text
