#include <string>
#include <utility>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "src/data/sampler_rng.h"

namespace feedline {

SubsetRandomSampler::SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed)
    : indices_(std::move(indices)), seed_(seed) {
  for (size_t i = 0; i < indices_.size(); ++i) {
    if (indices_[i] < 0) {
      throw IndexError("SubsetRandomSampler: indices[" + std::to_string(i) +
                       "] must be >= 0, got " + std::to_string(indices_[i]));
    }
  }
}

std::vector<int64_t> SubsetRandomSampler::Indices(int64_t epoch) const {
  Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kSubsetRandom);
  std::vector<int64_t> out = indices_;
  internal::Shuffle(out, rng);
  return out;
}

}  // namespace feedline
