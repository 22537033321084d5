#include "src/text/index_permutation.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace feedline::text::internal {
namespace {

TEST(IndexPermutationTest, IsAPermutationOfEverySize) {
  for (int64_t n : {0, 1, 2, 3, 5, 16, 17, 1000, 4097}) {
    IndexPermutation perm(n, /*key=*/42);
    std::vector<int> seen(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = perm.At(i);
      ASSERT_GE(j, 0);
      ASSERT_LT(j, n);
      ++seen[static_cast<size_t>(j)];
    }
    for (int64_t j = 0; j < n; ++j) EXPECT_EQ(seen[static_cast<size_t>(j)], 1) << n << " " << j;
  }
}

TEST(IndexPermutationTest, DependsOnTheKeyAndShuffles) {
  const int64_t n = 1000;
  IndexPermutation a(n, 1), b(n, 2), again(n, 1);
  int differ = 0, moved = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(a.At(i), again.At(i));
    differ += a.At(i) != b.At(i);
    moved += a.At(i) != i;
  }
  EXPECT_GT(differ, n * 9 / 10);
  EXPECT_GT(moved, n * 9 / 10);
}

}  // namespace
}  // namespace feedline::text::internal
