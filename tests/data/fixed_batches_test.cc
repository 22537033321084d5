#include "src/data/fixed_batches.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace feedline::internal {
namespace {

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{100});
  return v;
}

TEST(FixedBatchesTest, CountIsPaddlesFormula) {
  for (int64_t n = 0; n < 40; ++n) {
    for (int64_t bs = 1; bs < 12; ++bs) {
      for (bool drop_last : {false, true}) {
        const int64_t paddle = (n + (drop_last ? 0 : 1) * (bs - 1)) / bs;
        ASSERT_EQ(NumFixedBatches(n, bs, drop_last), paddle)
            << "n=" << n << " bs=" << bs << " drop_last=" << drop_last;
        ASSERT_EQ(CutFixedBatches(Iota(n), bs, drop_last).num_batches(), paddle);
      }
    }
  }
}

TEST(FixedBatchesTest, CountDoesNotOverflow) {
  EXPECT_EQ(NumFixedBatches(5, kHuge, false), 1);
  EXPECT_EQ(NumFixedBatches(5, kHuge, true), 0);
  EXPECT_EQ(NumFixedBatches(kHuge, kHuge, false), 1);
  EXPECT_EQ(NumFixedBatches(kHuge, 2, false), kHuge / 2 + 1);
  EXPECT_EQ(NumFixedBatches(0, kHuge, false), 0);
}

TEST(FixedBatchesTest, CutsConsecutiveRuns) {
  const std::vector<int64_t> order = Iota(7);
  const EpochPlan keep = CutFixedBatches(order, 3, /*drop_last=*/false);
  EXPECT_EQ(keep.indices, order);
  EXPECT_EQ(keep.offsets, (std::vector<int64_t>{0, 3, 6, 7}));
  const EpochPlan drop = CutFixedBatches(order, 3, /*drop_last=*/true);
  EXPECT_EQ(drop.indices, std::vector<int64_t>(order.begin(), order.begin() + 6));
  EXPECT_EQ(drop.offsets, (std::vector<int64_t>{0, 3, 6}));
}

TEST(FixedBatchesTest, HugeBatchSizeTakesEverythingOnce) {
  const std::vector<int64_t> order = Iota(5);
  const EpochPlan keep = CutFixedBatches(order, kHuge, false);
  ASSERT_EQ(keep.num_batches(), 1);
  EXPECT_EQ(keep.indices, order);
  EXPECT_EQ(CutFixedBatches(order, kHuge, true).num_batches(), 0);
  EXPECT_EQ(CutFixedBatches({}, 4, false).num_batches(), 0);
}

}  // namespace
}  // namespace feedline::internal
