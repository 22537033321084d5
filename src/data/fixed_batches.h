// Cutting an order into batches of a fixed size, shared by FixedBatchSampler
// and DistributedBatchSampler so the two count and cut alike.
//
// Thread safety: stateless functions; safe from any thread.
#ifndef FEEDLINE_SRC_DATA_FIXED_BATCHES_H_
#define FEEDLINE_SRC_DATA_FIXED_BATCHES_H_

#include <cstdint>
#include <vector>

#include "feedline/batch_sampler.h"

namespace feedline::internal {

// Paddle's batch count (n + (not drop_last) * (batch_size - 1)) // batch_size,
// without overflow for any batch_size. REQUIRES: n >= 0, batch_size >= 1.
int64_t NumFixedBatches(int64_t n, int64_t batch_size, bool drop_last);

// Consecutive batches of batch_size from `order`, which becomes the plan's
// indices (moved, not copied); the last, shorter batch is left out when
// drop_last. REQUIRES: batch_size >= 1.
EpochPlan CutFixedBatches(std::vector<int64_t> order, int64_t batch_size, bool drop_last);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_DATA_FIXED_BATCHES_H_
