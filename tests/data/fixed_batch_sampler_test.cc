#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "feedline/sampler.h"

namespace feedline {
namespace {

std::vector<int64_t> BatchAsVector(std::span<const int64_t> s) { return {s.begin(), s.end()}; }

struct SizeCase {
  int64_t n;
  int64_t batch_size;
  bool drop_last;
  int64_t num_batches;  // Paddle: (n + (not drop_last) * (bs - 1)) // bs
  int64_t last_batch;   // size of the final batch
};

void PrintTo(const SizeCase& c, std::ostream* out) {
  *out << "n=" << c.n << " batch_size=" << c.batch_size << " drop_last=" << c.drop_last;
}

std::string SizeCaseName(const ::testing::TestParamInfo<SizeCase>& info) {
  const SizeCase& c = info.param;
  return "N" + std::to_string(c.n) + "_bs" + std::to_string(c.batch_size) +
         (c.drop_last ? "_drop" : "_keep");
}

class FixedBatchSamplerSizeTest : public ::testing::TestWithParam<SizeCase> {};

TEST_P(FixedBatchSamplerSizeTest, CountsAndCutsLikePaddle) {
  const SizeCase c = GetParam();
  FixedBatchSampler batches(std::make_shared<SequentialSampler>(c.n), c.batch_size, c.drop_last);
  EXPECT_EQ(batches.size(), c.num_batches);
  const EpochPlan plan = batches.Plan(0);
  ASSERT_EQ(plan.num_batches(), c.num_batches);
  // Batches are consecutive runs of the sampler's order.
  int64_t next = 0;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const std::span<const int64_t> batch = plan.batch(b);
    const int64_t expected_size = b + 1 < plan.num_batches() ? c.batch_size : c.last_batch;
    ASSERT_EQ(static_cast<int64_t>(batch.size()), expected_size) << "batch " << b;
    for (int64_t i : batch) EXPECT_EQ(i, next++);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, FixedBatchSamplerSizeTest,
                         ::testing::Values(SizeCase{10, 3, false, 4, 1},
                                           SizeCase{10, 3, true, 3, 3}, SizeCase{9, 3, false, 3, 3},
                                           SizeCase{9, 3, true, 3, 3}, SizeCase{2, 5, false, 1, 2},
                                           SizeCase{2, 5, true, 0, 0}, SizeCase{0, 4, false, 0, 0},
                                           SizeCase{0, 4, true, 0, 0}, SizeCase{1, 1, false, 1, 1},
                                           SizeCase{7, 1, true, 7, 1},
                                           SizeCase{100, 64, false, 2, 36},
                                           SizeCase{100, 64, true, 1, 64}),
                         SizeCaseName);

TEST(FixedBatchSamplerTest, BatchesFollowTheSamplerOrder) {
  auto sampler = std::make_shared<RandomSampler>(23, /*seed=*/4);
  FixedBatchSampler batches(sampler, 5, /*drop_last=*/false);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const EpochPlan plan = batches.Plan(epoch);
    EXPECT_EQ(plan.indices, sampler->Indices(epoch)) << epoch;
    EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 5, 10, 15, 20, 23}));
  }
  EXPECT_NE(batches.Plan(0).indices, batches.Plan(1).indices);
  EXPECT_EQ(batches.Plan(1).indices, batches.Plan(1).indices);
}

TEST(FixedBatchSamplerTest, DropLastDropsOnlyTheShortTail) {
  auto sampler = std::make_shared<RandomSampler>(23, /*seed=*/4);
  FixedBatchSampler batches(sampler, 5, /*drop_last=*/true);
  const EpochPlan plan = batches.Plan(2);
  const std::vector<int64_t> order = sampler->Indices(2);
  EXPECT_EQ(plan.indices, std::vector<int64_t>(order.begin(), order.begin() + 20));
  EXPECT_EQ(plan.num_batches(), 4);
}

// A sampler whose Indices() returns more than its size() claims.
class Liar : public Sampler {
 public:
  int64_t size() const override { return 2; }
  std::vector<int64_t> Indices(int64_t) const override { return {9, 8, 7, 6, 5}; }
};

TEST(FixedBatchSamplerTest, CutsWhatTheSamplerReturns) {
  FixedBatchSampler batches(std::make_shared<Liar>(), 2, false);
  EXPECT_EQ(batches.size(), 1);  // from size()
  const EpochPlan plan = batches.Plan(0);
  ASSERT_EQ(plan.num_batches(), 3);
  EXPECT_EQ(BatchAsVector(plan.batch(2)), std::vector<int64_t>{5});
}

TEST(FixedBatchSamplerTest, NoPinnedEpoch) {
  FixedBatchSampler batches(std::make_shared<SequentialSampler>(4), 2, false);
  EXPECT_FALSE(batches.pinned_epoch().has_value());
}

TEST(FixedBatchSamplerTest, RejectsBadArguments) {
  try {
    FixedBatchSampler(std::make_shared<SequentialSampler>(4), 0, false);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch_size must be >= 1, got 0"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(FixedBatchSampler(std::make_shared<SequentialSampler>(4), -2, true), Error);
  EXPECT_THROW(FixedBatchSampler(nullptr, 2, false), Error);
  EXPECT_THROW(FixedBatchSampler(std::make_shared<RandomSampler>(4, 1), 2, false).Plan(-1), Error);
}

}  // namespace
}  // namespace feedline
