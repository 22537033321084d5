// What a LoaderState records about its loader: the options and batch sampler
// that decide the batches (FingerprintOf), and a digest of one epoch's plan
// (PlanHash) that differs when any batch would.
#include "src/loader/fingerprint.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/loader_options.h"
#include "feedline/sampler.h"

namespace feedline::internal {
namespace {

EpochPlan PlanOf(const std::vector<std::vector<int64_t>>& batches) {
  EpochPlan plan;
  for (const auto& batch : batches) plan.Add(batch);
  return plan;
}

TEST(FingerprintOf, BatchSizeAndShuffleWithoutASampler) {
  LoaderOptions options;
  options.batch_size = 32;
  options.drop_last = true;
  options.seed = 18446744073709551615ull;  // the full uint64 range, as text
  LoaderFingerprint f = FingerprintOf(options, nullptr, 1000);
  EXPECT_EQ(f.dataset_size, 1000);
  EXPECT_EQ(f.seed, "18446744073709551615");
  EXPECT_EQ(f.sampler, "sequential");
  EXPECT_EQ(f.batch_size, 32);
  EXPECT_EQ(f.drop_last, 1);
  EXPECT_EQ(f.num_replicas, 1);
  EXPECT_EQ(f.rank, 0);
  // The plan's parts are the caller's to fill.
  EXPECT_EQ(f.num_batches, -1);
  EXPECT_EQ(f.plan_hash, "");

  options.shuffle = true;
  EXPECT_EQ(FingerprintOf(options, nullptr, 1000).sampler, "random");
  EXPECT_EQ(FingerprintOf(options, nullptr, -1).dataset_size, -1);  // an IterableDataset
}

TEST(FingerprintOf, NamesTheSamplerKind) {
  LoaderOptions options;
  options.sampler = std::make_shared<SequentialSampler>(10);
  EXPECT_EQ(FingerprintOf(options, nullptr, 10).sampler, "sequential");
  options.sampler = std::make_shared<RandomSampler>(10, 1);
  EXPECT_EQ(FingerprintOf(options, nullptr, 10).sampler, "random");
}

TEST(FingerprintOf, ADistributedBatchSamplerGivesItsSplit) {
  LoaderOptions options;
  auto sampler = std::make_shared<DistributedBatchSampler>(100, 8, /*num_replicas=*/4,
                                                           /*rank=*/2, true, true, 5);
  options.batch_sampler = sampler;
  const LoaderFingerprint f = FingerprintOf(options, sampler.get(), 100);
  EXPECT_EQ(f.sampler, "distributed");
  EXPECT_EQ(f.batch_size, 8);
  EXPECT_EQ(f.drop_last, 1);
  EXPECT_EQ(f.num_replicas, 4);
  EXPECT_EQ(f.rank, 2);
}

TEST(FingerprintOf, ACustomBatchSamplerDecidesTheBatchSize) {
  struct Pairs : BatchSampler {
    int64_t size() const override { return 1; }
    EpochPlan Plan(int64_t) const override { return PlanOf({{0, 1}}); }
  };
  LoaderOptions options;
  auto sampler = std::make_shared<Pairs>();
  options.batch_sampler = sampler;
  const LoaderFingerprint f = FingerprintOf(options, sampler.get(), 2);
  EXPECT_EQ(f.sampler, "custom");
  EXPECT_EQ(f.batch_size, 0);
}

TEST(PlanHash, IsSixteenHexDigitsAndTheSameForTheSamePlan) {
  const std::string hash = PlanHash(PlanOf({{0, 1, 2}, {3, 4}}));
  ASSERT_EQ(hash.size(), 16u);
  EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(PlanHash(PlanOf({{0, 1, 2}, {3, 4}})), hash);
}

TEST(PlanHash, DiffersWhenAnyBatchWould) {
  const std::string hash = PlanHash(PlanOf({{0, 1, 2}, {3, 4}}));
  EXPECT_NE(PlanHash(PlanOf({{1, 0, 2}, {3, 4}})), hash);  // another order
  EXPECT_NE(PlanHash(PlanOf({{0, 1}, {2, 3, 4}})), hash);  // other boundaries
  EXPECT_NE(PlanHash(PlanOf({{0, 1, 2}, {3}})), hash);     // one sample fewer
  EXPECT_NE(PlanHash(PlanOf({{0, 1, 2, 3, 4}})), hash);    // one batch
  EXPECT_NE(PlanHash(EpochPlan{}), hash);
}

}  // namespace
}  // namespace feedline::internal
