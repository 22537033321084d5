#include "src/data/sampler_rng.h"

#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::internal {

void CheckEpoch(int64_t epoch) {
  if (epoch < 0) throw Error("epoch must be >= 0, got " + std::to_string(epoch));
}

Rng SamplerRng(uint64_t seed, int64_t epoch, SamplerStream stream, uint64_t index) {
  CheckEpoch(epoch);
  return Rng(seed, static_cast<uint64_t>(epoch), index, static_cast<uint64_t>(stream));
}

void Shuffle(std::span<int64_t> values, Rng& rng) {
  // Walking down from the end, position i takes a uniform pick among the
  // i + 1 values not yet placed.
  for (size_t i = values.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.UniformInt(i));
    std::swap(values[i - 1], values[j]);
  }
}

}  // namespace feedline::internal
