#include <algorithm>
#include <numeric>
#include <string>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "src/data/sampler_rng.h"

namespace feedline {

RandomSampler::RandomSampler(int64_t n, uint64_t seed, bool replacement,
                             std::optional<int64_t> num_samples)
    : n_(n), seed_(seed), replacement_(replacement), num_samples_(num_samples.value_or(n)) {
  if (n < 0) throw Error("RandomSampler: n must be >= 0, got " + std::to_string(n));
  if (num_samples.has_value() && *num_samples < 1) {
    throw Error("RandomSampler: num_samples must be >= 1, got " + std::to_string(*num_samples));
  }
  if (n == 0 && num_samples_ > 0) {
    throw Error("RandomSampler: cannot draw num_samples=" + std::to_string(num_samples_) +
                " indices from an empty range (n=0)");
  }
}

std::vector<int64_t> RandomSampler::Indices(int64_t epoch) const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (replacement_) {
    Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kRandomReplacement);
    for (int64_t k = 0; k < num_samples_; ++k) {
      out.push_back(static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(n_))));
    }
    return out;
  }
  // Permutation p of the epoch comes from its own generator, so the first
  // num_samples indices do not depend on how many permutations follow.
  internal::CheckEpoch(epoch);
  std::vector<int64_t> permutation(static_cast<size_t>(n_));
  for (uint64_t p = 0; static_cast<int64_t>(out.size()) < num_samples_; ++p) {
    std::iota(permutation.begin(), permutation.end(), int64_t{0});
    Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kRandom, p);
    internal::Shuffle(permutation, rng);
    const size_t take =
        std::min(permutation.size(), static_cast<size_t>(num_samples_) - out.size());
    out.insert(out.end(), permutation.begin(), permutation.begin() + static_cast<ptrdiff_t>(take));
  }
  return out;
}

}  // namespace feedline
