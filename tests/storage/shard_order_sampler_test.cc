#include "feedline/storage/shard_order_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

// 10 shards of 100 records.
std::vector<int64_t> Starts() {
  std::vector<int64_t> starts;
  for (int64_t s = 0; s < 10; ++s) starts.push_back(s * 100);
  return starts;
}

TEST(ShardOrderSampler, EveryRecordOncePerEpochAndAPureFunctionOfSeedAndEpoch) {
  const ShardOrderSampler sampler(Starts(), 1000, /*window=*/50, /*seed=*/3);
  for (int64_t epoch : {0, 1, 7}) {
    std::vector<int64_t> order = sampler.Indices(epoch);
    EXPECT_EQ(order, sampler.Indices(epoch));
    std::sort(order.begin(), order.end());
    std::vector<int64_t> all(1000);
    std::iota(all.begin(), all.end(), int64_t{0});
    EXPECT_EQ(order, all);
  }
  EXPECT_NE(sampler.Indices(0), sampler.Indices(1));
  EXPECT_NE(sampler.Indices(0), ShardOrderSampler(Starts(), 1000, 50, 4).Indices(0));
}

TEST(ShardOrderSampler, MostReadsStayNearTheSequentialStream) {
  // 10 shards of 100 records, window 100. A record waits in the buffer a
  // geometric number of steps (mean 100), so the share of draws that go back
  // more than k windows behind the stream is about exp(-k).
  const ShardOrderSampler sampler(Starts(), 1000, /*window=*/100, /*seed=*/1);
  // With window 1 the order is the stream itself (the shard order is drawn
  // first, the same for every window).
  const ShardOrderSampler stream_sampler(Starts(), 1000, /*window=*/1, /*seed=*/1);
  int64_t far = 0;
  int64_t draws = 0;
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    const std::vector<int64_t> stream = stream_sampler.Indices(epoch);
    std::vector<int64_t> position(1000);
    for (size_t p = 0; p < stream.size(); ++p) position[static_cast<size_t>(stream[p])] = p;
    const std::vector<int64_t> order = sampler.Indices(epoch);
    for (size_t t = 0; t < order.size(); ++t) {
      // Draw t comes after t + 100 records have entered the buffer.
      const int64_t streamed = std::min<int64_t>(static_cast<int64_t>(t) + 100, 1000);
      // Its wait in the buffer: geometric, P(wait > 300) = 0.99^300 = 0.049.
      if (streamed - position[static_cast<size_t>(order[t])] > 300) ++far;
      ++draws;
    }
  }
  EXPECT_LT(static_cast<double>(far) / draws, 0.08);  // exp(-3) = 0.05
  EXPECT_GT(far, 0);  // the tail exists: this is not a bounded reordering
  // And it is not sequential: records within a shard are shuffled.
  const std::vector<int64_t> order = sampler.Indices(0);
  int in_order = 0;
  for (size_t i = 1; i < order.size(); ++i) in_order += order[i] == order[i - 1] + 1;
  EXPECT_LT(in_order, 50);
}

TEST(ShardOrderSampler, TheShardOrderIsUniform) {
  // Which shard is read first, over 4000 epochs: chi-square against uniform
  // (9 degrees of freedom; 27.9 is the 0.001 critical value).
  const ShardOrderSampler sampler(Starts(), 1000, /*window=*/1, /*seed=*/9);
  std::vector<int> first(10, 0);
  const int epochs = 4000;
  for (int e = 0; e < epochs; ++e) ++first[static_cast<size_t>(sampler.Indices(e)[0] / 100)];
  double chi2 = 0;
  for (int count : first) chi2 += std::pow(count - epochs / 10.0, 2) / (epochs / 10.0);
  EXPECT_LT(chi2, 27.9);
}

TEST(ShardOrderSampler, AWindowOfEveryRecordIsAFullShuffle) {
  // Position of record 0 over many epochs: uniform over [0, 20) with a
  // window covering all 20 records (chi-square, 19 dof, 43.8 at 0.001).
  const ShardOrderSampler sampler({0, 5, 10, 15}, 20, /*window=*/20, /*seed=*/2);
  std::vector<int> position(20, 0);
  const int epochs = 6000;
  for (int e = 0; e < epochs; ++e) {
    const std::vector<int64_t> order = sampler.Indices(e);
    ++position[static_cast<size_t>(std::find(order.begin(), order.end(), 0) - order.begin())];
  }
  double chi2 = 0;
  for (int count : position) chi2 += std::pow(count - epochs / 20.0, 2) / (epochs / 20.0);
  EXPECT_LT(chi2, 43.8);
}

TEST(ShardOrderSampler, BadArgumentsThrow) {
  EXPECT_THROW(ShardOrderSampler({}, 10, 4, 0), Error);
  EXPECT_THROW(ShardOrderSampler({1, 5}, 10, 4, 0), Error);
  EXPECT_THROW(ShardOrderSampler({0, 5, 5}, 10, 4, 0), Error);
  EXPECT_THROW(ShardOrderSampler({0, 5}, 5, 4, 0), Error);
  EXPECT_THROW(ShardOrderSampler({0, 5}, 10, 0, 0), Error);
  EXPECT_THROW(ShardOrderSampler({0, 5}, 10, 4, 0).Indices(-1), Error);
}

}  // namespace
}  // namespace feedline::storage
