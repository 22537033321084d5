#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "testing/chi_square.h"
#include "testing/errors.h"

namespace feedline {
namespace {

using test::ErrorOf;

TEST(WeightedRandomSamplerTest, FrequenciesFollowTheWeights) {
  const std::vector<double> weights = {1.0, 0.0, 2.0, 4.0, 0.5, 0.0, 2.5};
  WeightedRandomSampler sampler(weights, /*num_samples=*/50000, /*seed=*/3);
  EXPECT_EQ(sampler.size(), 50000);
  const std::vector<int64_t> draws = sampler.Indices(0);
  ASSERT_EQ(draws.size(), 50000u);
  std::vector<int64_t> counts(weights.size());
  for (int64_t i : draws) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, static_cast<int64_t>(weights.size()));
    ++counts[static_cast<size_t>(i)];
  }
  // Zero weights are never drawn; the rest match their share.
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[5], 0);
  std::vector<int64_t> nonzero_counts;
  std::vector<double> nonzero_weights;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > 0) {
      nonzero_counts.push_back(counts[i]);
      nonzero_weights.push_back(weights[i]);
    }
  }
  EXPECT_LT(test::ChiSquare(nonzero_counts, nonzero_weights),
            test::ChiSquareBound(static_cast<int>(nonzero_counts.size()) - 1));
}

TEST(WeightedRandomSamplerTest, LeadingAndTrailingZeroWeightsAreNeverDrawn) {
  WeightedRandomSampler sampler({0.0, 0.0, 1.0, 0.0}, 5000, /*seed=*/1);
  for (int64_t i : sampler.Indices(0)) ASSERT_EQ(i, 2);
}

TEST(WeightedRandomSamplerTest, PureFunctionOfSeedAndEpoch) {
  const std::vector<double> weights = {1, 2, 3, 4, 5, 6, 7, 8};
  for (bool replacement : {true, false}) {
    WeightedRandomSampler a(weights, 8, 5, replacement), b(weights, 8, 5, replacement);
    EXPECT_EQ(a.Indices(3), b.Indices(3)) << replacement;
    EXPECT_NE(a.Indices(3), a.Indices(4)) << replacement;
    EXPECT_NE(a.Indices(3), WeightedRandomSampler(weights, 8, 6, replacement).Indices(3))
        << replacement;
  }
}

TEST(WeightedRandomSamplerTest, WithoutReplacementDrawsDistinctNonZeroIndices) {
  const std::vector<double> weights = {3.0, 0.0, 1.0, 7.0, 0.0, 2.0, 5.0};
  WeightedRandomSampler some(weights, 3, /*seed=*/2, /*replacement=*/false);
  for (int64_t epoch = 0; epoch < 50; ++epoch) {
    const std::vector<int64_t> draws = some.Indices(epoch);
    ASSERT_EQ(draws.size(), 3u);
    EXPECT_EQ(std::set<int64_t>(draws.begin(), draws.end()).size(), 3u);
    for (int64_t i : draws) EXPECT_GT(weights[static_cast<size_t>(i)], 0.0) << i;
  }
  // Asking for every non-zero weight gives exactly those indices.
  WeightedRandomSampler all(weights, 5, /*seed=*/2, /*replacement=*/false);
  std::vector<int64_t> draws = all.Indices(0);
  std::sort(draws.begin(), draws.end());
  EXPECT_EQ(draws, (std::vector<int64_t>{0, 2, 3, 5, 6}));
}

TEST(WeightedRandomSamplerTest, WithoutReplacementFollowsSequentialDraws) {
  // Weights 1, 2, 3; two draws without replacement. Drawing one at a time
  // proportionally to the remaining weights gives
  // P(i, j) = w_i / 6 * w_j / (6 - w_i).
  const std::vector<double> weights = {1.0, 2.0, 3.0};
  WeightedRandomSampler sampler(weights, 2, /*seed=*/12, /*replacement=*/false);
  std::map<std::pair<int64_t, int64_t>, int64_t> seen;
  for (int64_t epoch = 0; epoch < 12000; ++epoch) {
    const std::vector<int64_t> d = sampler.Indices(epoch);
    ++seen[{d[0], d[1]}];
  }
  std::vector<int64_t> counts;
  std::vector<double> expected;
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      if (i == j) continue;
      counts.push_back(seen[{i, j}]);
      const double wi = weights[static_cast<size_t>(i)];
      const double wj = weights[static_cast<size_t>(j)];
      expected.push_back(wi / 6.0 * wj / (6.0 - wi));
    }
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_LT(test::ChiSquare(counts, expected), test::ChiSquareBound(5));
  // The test can tell: the same counts are far from a uniform choice of pairs.
  EXPECT_GT(test::ChiSquare(counts), test::ChiSquareBound(5));
}

TEST(WeightedRandomSamplerTest, RejectsBadWeights) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(ErrorOf([] { WeightedRandomSampler({}, 1, 0); }).find("weights must not be empty"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              WeightedRandomSampler({1.0, 2.0, -0.5}, 1, 0);
            }).find("weights[2] must be finite and >= 0, got -0.5"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { WeightedRandomSampler({inf}, 1, 0); }).find("weights[0]"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              WeightedRandomSampler({1.0, nan}, 1, 0);
            }).find("weights[1]"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              WeightedRandomSampler({0.0, 0.0}, 1, 0);
            }).find("all weights are zero"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              WeightedRandomSampler({1e308, 1e308}, 1, 0);
            }).find("infinity"),
            std::string::npos);
}

TEST(WeightedRandomSamplerTest, RejectsBadCounts) {
  EXPECT_NE(
      ErrorOf([] { WeightedRandomSampler({1.0}, 0, 0); }).find("num_samples must be >= 1, got 0"),
      std::string::npos);
  EXPECT_NE(ErrorOf([] {
              WeightedRandomSampler({1.0, 0.0, 2.0}, 3, 0, false);
            }).find("non-zero weights (2), got 3"),
            std::string::npos);
  // With replacement any count is fine.
  EXPECT_EQ(WeightedRandomSampler({1.0, 0.0, 2.0}, 30, 0, true).Indices(0).size(), 30u);
  EXPECT_THROW(WeightedRandomSampler({1.0}, 1, 0).Indices(-1), Error);
}

}  // namespace
}  // namespace feedline
