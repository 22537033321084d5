#include <gtest/gtest.h>

#include <vector>

#include "feedline/batch_sampler.h"

namespace feedline {
namespace {

std::vector<int64_t> ToVector(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

TEST(EpochPlanTest, StartsEmpty) {
  EpochPlan plan;
  EXPECT_EQ(plan.num_batches(), 0);
  EXPECT_TRUE(plan.indices.empty());
  EXPECT_EQ(plan.offsets, std::vector<int64_t>{0});
}

TEST(EpochPlanTest, AddAppendsBatches) {
  EpochPlan plan;
  const std::vector<int64_t> first = {4, 2, 9};
  const std::vector<int64_t> second = {7};
  const std::vector<int64_t> third = {1, 0};
  plan.Add(first);
  plan.Add(second);
  plan.Add(third);
  ASSERT_EQ(plan.num_batches(), 3);
  EXPECT_EQ(plan.indices, (std::vector<int64_t>{4, 2, 9, 7, 1, 0}));
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 3, 4, 6}));
  EXPECT_EQ(ToVector(plan.batch(0)), first);
  EXPECT_EQ(ToVector(plan.batch(1)), second);
  EXPECT_EQ(ToVector(plan.batch(2)), third);
}

TEST(EpochPlanTest, EmptyBatchIsKept) {
  EpochPlan plan;
  plan.Add({});
  const std::vector<int64_t> one = {5};
  plan.Add(one);
  ASSERT_EQ(plan.num_batches(), 2);
  EXPECT_TRUE(plan.batch(0).empty());
  EXPECT_EQ(ToVector(plan.batch(1)), one);
}

}  // namespace
}  // namespace feedline
