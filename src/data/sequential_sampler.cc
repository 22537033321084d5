#include <numeric>
#include <string>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "src/data/sampler_rng.h"

namespace feedline {

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  if (n < 0) throw Error("SequentialSampler: n must be >= 0, got " + std::to_string(n));
}

std::vector<int64_t> SequentialSampler::Indices(int64_t epoch) const {
  internal::CheckEpoch(epoch);
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

}  // namespace feedline
