#include "src/data/sampler_rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "feedline/error.h"
#include "testing/chi_square.h"

namespace feedline::internal {
namespace {

std::vector<int64_t> IndicesUpTo(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

TEST(SamplerRngTest, ShuffleIsAPermutation) {
  for (int64_t n : {0, 1, 2, 17, 1000}) {
    std::vector<int64_t> v = IndicesUpTo(n);
    Rng rng(1, 0, 0);
    Shuffle(v, rng);
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, IndicesUpTo(n)) << n;
    if (n >= 17) {
      EXPECT_NE(v, IndicesUpTo(n)) << n;
    }
  }
}

TEST(SamplerRngTest, ShuffleDependsOnlyOnTheGenerator) {
  std::vector<int64_t> a = IndicesUpTo(50), b = IndicesUpTo(50), c = IndicesUpTo(50);
  Rng ra(4, 2, 0), rb(4, 2, 0), rc(4, 3, 0);
  Shuffle(a, ra);
  Shuffle(b, rb);
  Shuffle(c, rc);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SamplerRngTest, EveryPermutationEquallyLikely) {
  // All 24 orders of 4 items, each from its own generator; a classic
  // off-by-one (j drawn from [0, n) at every step) fails this badly.
  std::map<std::vector<int64_t>, int64_t> seen;
  constexpr int kTrials = 24000;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<int64_t> v = IndicesUpTo(4);
    Rng rng(/*seed=*/77, /*epoch=*/0, /*index=*/static_cast<uint64_t>(t));
    Shuffle(v, rng);
    ++seen[v];
  }
  ASSERT_EQ(seen.size(), 24u);
  std::vector<int64_t> counts;
  for (const auto& [order, count] : seen) counts.push_back(count);
  EXPECT_LT(test::ChiSquare(counts), test::ChiSquareBound(23));
}

TEST(SamplerRngTest, StreamsAndIndicesGiveDifferentGenerators) {
  const SamplerStream streams[] = {SamplerStream::kRandom,
                                   SamplerStream::kRandomReplacement,
                                   SamplerStream::kSubsetRandom,
                                   SamplerStream::kWeighted,
                                   SamplerStream::kWeightedNoReplacement,
                                   SamplerStream::kClassBalanced,
                                   SamplerStream::kDynamicOrder,
                                   SamplerStream::kDynamicBatches,
                                   SamplerStream::kDistributed};
  std::set<uint64_t> firsts;
  for (SamplerStream stream : streams) {
    EXPECT_NE(static_cast<uint64_t>(stream), 0u);  // 0 is the per-sample stream
    for (uint64_t index = 0; index < 3; ++index) {
      firsts.insert(SamplerRng(5, 1, stream, index).NextU64());
    }
  }
  // Also distinct from the per-sample generator of sample 0.
  firsts.insert(Rng(5, 1, 0).NextU64());
  EXPECT_EQ(firsts.size(), std::size(streams) * 3 + 1);
}

TEST(SamplerRngTest, SamplerRngIsAPureFunctionOfItsKey) {
  Rng a = SamplerRng(9, 4, SamplerStream::kRandom, 2);
  Rng b = SamplerRng(9, 4, SamplerStream::kRandom, 2);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(a.NextU64(), b.NextU64());
  EXPECT_NE(SamplerRng(9, 4, SamplerStream::kRandom).NextU64(),
            SamplerRng(9, 5, SamplerStream::kRandom).NextU64());
  EXPECT_NE(SamplerRng(9, 4, SamplerStream::kRandom).NextU64(),
            SamplerRng(10, 4, SamplerStream::kRandom).NextU64());
}

TEST(SamplerRngTest, NegativeEpochIsError) {
  EXPECT_NO_THROW(CheckEpoch(0));
  try {
    CheckEpoch(-2);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("epoch must be >= 0, got -2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(SamplerRng(1, -1, SamplerStream::kRandom), Error);
}

}  // namespace
}  // namespace feedline::internal
