#include "src/text/index_permutation.h"

#include "feedline/rng.h"

namespace feedline::text::internal {

IndexPermutation::IndexPermutation(int64_t n, uint64_t key)
    : n_(static_cast<uint64_t>(n)), key_(key) {
  int bits = 2;
  while (bits < 62 && (uint64_t{1} << bits) < n_) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
}

uint64_t IndexPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t round = 0; round < 4; ++round) {
    const uint64_t mixed = left ^ (MixSeed(key_ + round, right) & half_mask_);
    left = right;
    right = mixed;
  }
  return (left << half_bits_) | right;
}

int64_t IndexPermutation::At(int64_t i) const {
  if (n_ <= 1) return i;
  // Cycle walking: the network permutes [0, 4^half_bits), and following a
  // cycle from inside [0, n) reaches [0, n) again, so this is a permutation
  // of [0, n).
  uint64_t x = Encrypt(static_cast<uint64_t>(i));
  while (x >= n_) x = Encrypt(x);
  return static_cast<int64_t>(x);
}

}  // namespace feedline::text::internal
