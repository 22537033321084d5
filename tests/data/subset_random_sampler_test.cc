#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "testing/chi_square.h"

namespace feedline {
namespace {

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(SubsetRandomSamplerTest, PermutesTheGivenIndices) {
  const std::vector<int64_t> indices = {40, 3, 17, 3, 99, 8, 61, 25};
  SubsetRandomSampler sampler(indices, /*seed=*/1);
  EXPECT_EQ(sampler.size(), 8);
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    // Same multiset (the repeated 3 stays repeated), new order.
    EXPECT_EQ(Sorted(sampler.Indices(epoch)), Sorted(indices)) << epoch;
  }
}

TEST(SubsetRandomSamplerTest, PureFunctionOfSeedAndEpoch) {
  std::vector<int64_t> indices(64);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(3 * i + 1);
  SubsetRandomSampler a(indices, 9), b(indices, 9), other_seed(indices, 10);
  EXPECT_EQ(a.Indices(2), b.Indices(2));
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 5; ++epoch) orders.insert(a.Indices(epoch));
  orders.insert(other_seed.Indices(0));
  orders.insert(indices);
  EXPECT_EQ(orders.size(), 7u);
}

TEST(SubsetRandomSamplerTest, FirstPositionIsUniform) {
  const std::vector<int64_t> indices = {5, 10, 15, 20, 25, 30};
  SubsetRandomSampler sampler(indices, /*seed=*/4);
  std::vector<int64_t> counts(indices.size());
  for (int64_t epoch = 0; epoch < 6000; ++epoch) {
    const int64_t first = sampler.Indices(epoch).front();
    ++counts[static_cast<size_t>(first / 5 - 1)];
  }
  EXPECT_LT(test::ChiSquare(counts), test::ChiSquareBound(5));
}

TEST(SubsetRandomSamplerTest, EmptyAndSingle) {
  EXPECT_TRUE(SubsetRandomSampler({}, 1).Indices(0).empty());
  EXPECT_EQ(SubsetRandomSampler({}, 1).size(), 0);
  EXPECT_EQ(SubsetRandomSampler({42}, 1).Indices(5), std::vector<int64_t>{42});
}

TEST(SubsetRandomSamplerTest, RejectsNegativeIndicesAndEpochs) {
  try {
    SubsetRandomSampler({1, 2, -7}, 0);
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("indices[2] must be >= 0, got -7"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(SubsetRandomSampler({1}, 0).Indices(-1), Error);
}

}  // namespace
}  // namespace feedline
