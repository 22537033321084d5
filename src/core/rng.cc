#include "feedline/rng.h"

namespace feedline {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

}  // namespace

uint64_t MixSeed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9E3779B97F4A7C15ull * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed, uint64_t epoch, uint64_t index, uint64_t stream) {
  const uint64_t key = MixSeed(seed, stream);
  key_ = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  // The counter's top word counts blocks; the rest names the sample.
  const uint64_t who = MixSeed(epoch, index);
  counter_ = {static_cast<uint32_t>(index), static_cast<uint32_t>(who >> 32),
              static_cast<uint32_t>(who), 0u};
}

void Rng::Refill() {
  std::array<uint32_t, 4> c = counter_;
  std::array<uint32_t, 2> k = key_;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, c[0], &hi0, &lo0);
    MulHiLo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  block_ = c;
  used_ = 0;
  ++counter_[3];
}

uint32_t Rng::NextU32() {
  if (used_ == 4) Refill();
  return block_[used_++];
}

uint64_t Rng::NextU64() {
  const uint64_t hi = NextU32();
  return (hi << 32) | NextU32();
}

double Rng::Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

uint64_t Rng::UniformInt(uint64_t n) {
  // Lemire's multiply-and-reject: the high word of x * n is uniform in
  // [0, n) once the few x whose low word falls below 2^64 mod n are
  // rejected; the division runs only on the rare first rejection check.
  unsigned __int128 m = static_cast<unsigned __int128>(NextU64()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(NextU64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

}  // namespace feedline
