#include <string>
#include <utility>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "src/data/fixed_batches.h"

namespace feedline {

FixedBatchSampler::FixedBatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size,
                                     bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  if (!sampler_) throw Error("FixedBatchSampler: sampler must not be null");
  if (batch_size < 1) {
    throw Error("FixedBatchSampler: batch_size must be >= 1, got " + std::to_string(batch_size));
  }
}

int64_t FixedBatchSampler::size() const {
  return internal::NumFixedBatches(sampler_->size(), batch_size_, drop_last_);
}

EpochPlan FixedBatchSampler::Plan(int64_t epoch) const {
  // Cuts what the sampler actually returned: a custom sampler's Indices may
  // disagree with its size().
  return internal::CutFixedBatches(sampler_->Indices(epoch), batch_size_, drop_last_);
}

}  // namespace feedline
