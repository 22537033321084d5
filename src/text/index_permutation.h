// IndexPermutation: a random permutation of [0, n) computed one index at a
// time, in O(1) time and memory: a four-round Feistel network over the
// smallest even number of bits that covers n, walked until it lands inside
// [0, n) (fewer than four steps on average). A source of a MixedDataset is
// shuffled with it, so that millions of rows need no shuffled index array
// and a pass over a source is a pure function of (key, pass).
//
// Thread safety: immutable; At may be called from any thread.
#ifndef FEEDLINE_SRC_TEXT_INDEX_PERMUTATION_H_
#define FEEDLINE_SRC_TEXT_INDEX_PERMUTATION_H_

#include <cstdint>

namespace feedline::text::internal {

class IndexPermutation {
 public:
  // REQUIRES: n >= 0.
  IndexPermutation(int64_t n, uint64_t key);

  // The image of i. REQUIRES: 0 <= i < n.
  int64_t At(int64_t i) const;

 private:
  uint64_t Encrypt(uint64_t x) const;

  uint64_t n_;
  uint64_t key_;
  int half_bits_;
  uint64_t half_mask_;
};

}  // namespace feedline::text::internal

#endif  // FEEDLINE_SRC_TEXT_INDEX_PERMUTATION_H_
