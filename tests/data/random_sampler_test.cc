#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "testing/chi_square.h"
#include "testing/errors.h"

namespace feedline {
namespace {

bool IsPermutation(std::vector<int64_t> v, int64_t n) {
  if (static_cast<int64_t>(v.size()) != n) return false;
  std::sort(v.begin(), v.end());
  for (int64_t i = 0; i < n; ++i) {
    if (v[static_cast<size_t>(i)] != i) return false;
  }
  return true;
}

using test::ErrorOf;

TEST(RandomSamplerTest, EachEpochIsAPermutation) {
  RandomSampler sampler(100, /*seed=*/3);
  EXPECT_EQ(sampler.size(), 100);
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    EXPECT_TRUE(IsPermutation(sampler.Indices(epoch), 100)) << epoch;
  }
}

TEST(RandomSamplerTest, PureFunctionOfSeedAndEpoch) {
  RandomSampler a(200, /*seed=*/11);
  RandomSampler b(200, /*seed=*/11);
  EXPECT_EQ(a.Indices(4), b.Indices(4));
  EXPECT_EQ(a.Indices(4), a.Indices(4));
  // Asking for other epochs in between changes nothing.
  const std::vector<int64_t> e2 = a.Indices(2);
  a.Indices(9);
  EXPECT_EQ(a.Indices(2), e2);
}

TEST(RandomSamplerTest, NewOrderEveryEpochAndSeed) {
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 6; ++epoch) orders.insert(RandomSampler(50, 1).Indices(epoch));
  for (uint64_t seed = 2; seed < 6; ++seed) orders.insert(RandomSampler(50, seed).Indices(0));
  EXPECT_EQ(orders.size(), 10u);
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  EXPECT_EQ(orders.count(identity), 0u);
}

TEST(RandomSamplerTest, EveryPositionIsUniform) {
  // Over many epochs, the index at position 0 and at the last position are
  // each uniform over [0, n).
  constexpr int64_t kN = 8;
  RandomSampler sampler(kN, /*seed=*/5);
  std::vector<int64_t> first(kN), last(kN);
  for (int64_t epoch = 0; epoch < 8000; ++epoch) {
    const std::vector<int64_t> order = sampler.Indices(epoch);
    ++first[static_cast<size_t>(order.front())];
    ++last[static_cast<size_t>(order.back())];
  }
  EXPECT_LT(test::ChiSquare(first), test::ChiSquareBound(kN - 1));
  EXPECT_LT(test::ChiSquare(last), test::ChiSquareBound(kN - 1));
}

TEST(RandomSamplerTest, FewerSamplesArePrefixOfThePermutation) {
  RandomSampler full(30, /*seed=*/8);
  RandomSampler part(30, /*seed=*/8, /*replacement=*/false, /*num_samples=*/12);
  EXPECT_EQ(part.size(), 12);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const std::vector<int64_t> all = full.Indices(epoch);
    EXPECT_EQ(part.Indices(epoch), std::vector<int64_t>(all.begin(), all.begin() + 12));
  }
}

TEST(RandomSamplerTest, MoreSamplesRepeatFreshPermutations) {
  RandomSampler sampler(10, /*seed=*/2, /*replacement=*/false, /*num_samples=*/35);
  const std::vector<int64_t> order = sampler.Indices(1);
  ASSERT_EQ(order.size(), 35u);
  std::set<std::vector<int64_t>> blocks;
  for (size_t b = 0; b < 3; ++b) {
    std::vector<int64_t> block(order.begin() + b * 10, order.begin() + (b + 1) * 10);
    EXPECT_TRUE(IsPermutation(block, 10)) << b;
    blocks.insert(block);
  }
  EXPECT_EQ(blocks.size(), 3u);  // not one permutation repeated
  const std::set<int64_t> tail(order.begin() + 30, order.end());
  EXPECT_EQ(tail.size(), 5u);  // the partial block has no repeats
  // The first block is the plain permutation of the epoch.
  const std::vector<int64_t> plain = RandomSampler(10, 2).Indices(1);
  EXPECT_EQ(std::vector<int64_t>(order.begin(), order.begin() + 10), plain);
}

TEST(RandomSamplerTest, WithReplacementDrawsIndependently) {
  RandomSampler sampler(1000, /*seed=*/6, /*replacement=*/true);
  EXPECT_EQ(sampler.size(), 1000);
  const std::vector<int64_t> draws = sampler.Indices(0);
  ASSERT_EQ(draws.size(), 1000u);
  for (int64_t i : draws) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 1000);
  }
  // 1000 draws from 1000 values: about 368 values never appear.
  const std::set<int64_t> distinct(draws.begin(), draws.end());
  EXPECT_LT(distinct.size(), 700u);
  EXPECT_GT(distinct.size(), 550u);
  EXPECT_EQ(sampler.Indices(0), draws);
  EXPECT_NE(sampler.Indices(1), draws);
}

TEST(RandomSamplerTest, WithReplacementIsUniform) {
  constexpr int64_t kN = 12;
  RandomSampler sampler(kN, /*seed=*/21, /*replacement=*/true, /*num_samples=*/60000);
  EXPECT_EQ(sampler.size(), 60000);
  std::vector<int64_t> counts(kN);
  for (int64_t i : sampler.Indices(3)) ++counts[static_cast<size_t>(i)];
  EXPECT_LT(test::ChiSquare(counts), test::ChiSquareBound(kN - 1));
}

TEST(RandomSamplerTest, EmptyRange) {
  RandomSampler sampler(0, 1);
  EXPECT_EQ(sampler.size(), 0);
  EXPECT_TRUE(sampler.Indices(0).empty());
  EXPECT_TRUE(RandomSampler(0, 1, /*replacement=*/true).Indices(2).empty());
}

TEST(RandomSamplerTest, SingleItem) {
  EXPECT_EQ(RandomSampler(1, 4).Indices(3), std::vector<int64_t>{0});
  EXPECT_EQ(RandomSampler(1, 4, true, 3).Indices(3), (std::vector<int64_t>{0, 0, 0}));
}

TEST(RandomSamplerTest, RejectsBadArguments) {
  EXPECT_NE(ErrorOf([] { RandomSampler(-1, 0); }).find("n must be >= 0, got -1"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { RandomSampler(5, 0, false, 0); }).find("num_samples must be >= 1, got 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { RandomSampler(5, 0, true, -3); }).find("got -3"), std::string::npos);
  EXPECT_NE(ErrorOf([] { RandomSampler(0, 0, true, 4); }).find("n=0"), std::string::npos);
  EXPECT_NE(ErrorOf([] { RandomSampler(5, 0).Indices(-1); }).find("epoch"), std::string::npos);
  EXPECT_THROW(RandomSampler(5, 0, true).Indices(-1), Error);
}

}  // namespace
}  // namespace feedline
