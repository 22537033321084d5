#include "feedline/batch_sampler.h"

namespace feedline {

void EpochPlan::Add(std::span<const int64_t> batch_indices) {
  indices.insert(indices.end(), batch_indices.begin(), batch_indices.end());
  offsets.push_back(static_cast<int64_t>(indices.size()));
}

}  // namespace feedline
