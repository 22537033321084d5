#include "src/data/fixed_batches.h"

#include <algorithm>
#include <utility>

namespace feedline::internal {

int64_t NumFixedBatches(int64_t n, int64_t batch_size, bool drop_last) {
  if (drop_last || n == 0) return n / batch_size;
  return (n - 1) / batch_size + 1;
}

EpochPlan CutFixedBatches(std::vector<int64_t> order, int64_t batch_size, bool drop_last) {
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t batches = NumFixedBatches(n, batch_size, drop_last);
  EpochPlan plan;
  plan.offsets.reserve(static_cast<size_t>(batches) + 1);
  // `end` advances by what was taken, so it never passes n (no overflow for
  // a huge batch_size).
  int64_t end = 0;
  for (int64_t b = 0; b < batches; ++b) {
    end += std::min(batch_size, n - end);
    plan.offsets.push_back(end);
  }
  // The order becomes the plan's indices (a copy of an epoch of a large
  // dataset cost as much as drawing it); drop_last's shorter tail goes.
  order.resize(static_cast<size_t>(end));
  plan.indices = std::move(order);
  return plan;
}

}  // namespace feedline::internal
