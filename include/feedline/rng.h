// Rng: a counter-based random generator (Philox4x32-10).
//
// Every random choice in feedline is drawn from an Rng keyed by
// (seed, epoch, index, stream), never from a per-thread or per-worker state.
// So a sample's augmentation depends only on which sample it is, and batches
// are bit-identical whatever the number of workers or the order they run in.
// The distributions below are implemented here (not with <random>'s
// distributions, whose algorithms differ between standard libraries).
//
// Thread safety: an Rng is a small value; use one per thread.
//
// Example:
//   Rng rng(/*seed=*/7, /*epoch=*/0, /*index=*/42);
//   bool flip = rng.Bernoulli(0.5);
#ifndef FEEDLINE_RNG_H_
#define FEEDLINE_RNG_H_

#include <array>
#include <cstdint>
#include <limits>

#include "feedline/export.h"

namespace feedline {

class FEEDLINE_EXPORT Rng {
 public:
  using result_type = uint64_t;

  Rng(uint64_t seed, uint64_t epoch, uint64_t index, uint64_t stream = 0);

  // 32 and 64 uniformly random bits.
  uint32_t NextU32();
  uint64_t NextU64();
  // UniformRandomBitGenerator, so std::shuffle-like code can take it.
  uint64_t operator()() { return NextU64(); }
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }

  // Uniform double in [0, 1) with 53 random bits.
  double Uniform();
  // Uniform double in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n), unbiased. REQUIRES: n > 0.
  uint64_t UniformInt(uint64_t n);
  // True with probability p.
  bool Bernoulli(double p) { return Uniform() < p; }

 private:
  void Refill();

  std::array<uint32_t, 2> key_;
  std::array<uint32_t, 4> counter_;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
};

// Mixes 64-bit values into one (SplitMix64 finalizer); used to derive seeds.
FEEDLINE_EXPORT uint64_t MixSeed(uint64_t a, uint64_t b);

}  // namespace feedline

#endif  // FEEDLINE_RNG_H_
