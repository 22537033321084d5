// Sampler randomness: the Rng streams the samplers draw from and the
// Fisher-Yates shuffle they share.
//
// Each sampler draws from its own stream, so two samplers built with one seed
// are independent of each other and of the per-sample generator
// Rng(seed, epoch, index) (stream 0) that datasets use for augmentation.
// The shuffle is written here rather than taken from std::shuffle, whose
// algorithm differs between standard libraries.
//
// Thread safety: stateless functions; safe from any thread.
#ifndef FEEDLINE_SRC_DATA_SAMPLER_RNG_H_
#define FEEDLINE_SRC_DATA_SAMPLER_RNG_H_

#include <cstdint>
#include <span>

#include "feedline/rng.h"

namespace feedline::internal {

// Stream numbers ("SMPL" followed by a sampler number); never 0.
enum class SamplerStream : uint64_t {
  kRandom = 0x534D504C00000001ull,
  kRandomReplacement = 0x534D504C00000002ull,
  kSubsetRandom = 0x534D504C00000003ull,
  kWeighted = 0x534D504C00000004ull,
  kWeightedNoReplacement = 0x534D504C00000005ull,
  kClassBalanced = 0x534D504C00000006ull,
  kDynamicOrder = 0x534D504C00000007ull,
  kDynamicBatches = 0x534D504C00000008ull,
  kDistributed = 0x534D504C00000009ull,
  kHardExample = 0x534D504C0000000Aull,
};

// Throws Error unless epoch >= 0 (epochs key the generators as unsigned).
void CheckEpoch(int64_t epoch);

// The generator of `stream` for (seed, epoch); `index` tells apart several
// generators of one epoch (one per repeated permutation, say).
// Throws Error if epoch < 0.
Rng SamplerRng(uint64_t seed, int64_t epoch, SamplerStream stream, uint64_t index = 0);

// Shuffles `values` in place (Fisher-Yates): every permutation is equally
// likely, and the result depends only on the generator's state.
void Shuffle(std::span<int64_t> values, Rng& rng);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_DATA_SAMPLER_RNG_H_
