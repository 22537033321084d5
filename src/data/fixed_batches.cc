#include "src/data/fixed_batches.h"

#include <algorithm>

namespace feedline::internal {

int64_t NumFixedBatches(int64_t n, int64_t batch_size, bool drop_last) {
  if (drop_last || n == 0) return n / batch_size;
  return (n - 1) / batch_size + 1;
}

EpochPlan CutFixedBatches(std::span<const int64_t> order, int64_t batch_size, bool drop_last) {
  const int64_t n = static_cast<int64_t>(order.size());
  EpochPlan plan;
  plan.indices.reserve(order.size());
  plan.offsets.reserve(static_cast<size_t>(NumFixedBatches(n, batch_size, drop_last)) + 1);
  // `begin` advances by what was taken, so it never passes n (no overflow
  // for a huge batch_size).
  for (int64_t begin = 0; begin < n;) {
    const int64_t count = std::min(batch_size, n - begin);
    if (count < batch_size && drop_last) break;
    plan.Add(order.subspan(static_cast<size_t>(begin), static_cast<size_t>(count)));
    begin += count;
  }
  return plan;
}

}  // namespace feedline::internal
