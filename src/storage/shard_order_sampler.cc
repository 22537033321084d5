#include "feedline/storage/shard_order_sampler.h"

#include <numeric>
#include <string>

#include "feedline/error.h"
#include "feedline/rng.h"

namespace feedline::storage {
namespace {

// This sampler's Rng stream ("SMPL" and a number no other sampler uses), so
// its draws are independent of the other samplers' and of augmentation's.
constexpr uint64_t kShardOrderStream = 0x534D504C000000A1ull;

}  // namespace

ShardOrderSampler::ShardOrderSampler(std::vector<int64_t> shard_starts, int64_t size,
                                     int64_t window, uint64_t seed)
    : starts_(std::move(shard_starts)), size_(size), window_(window), seed_(seed) {
  if (starts_.empty() || starts_[0] != 0) {
    throw Error("ShardOrderSampler: shard_starts must begin with 0");
  }
  for (size_t i = 1; i < starts_.size(); ++i) {
    if (starts_[i] <= starts_[i - 1]) {
      throw Error("ShardOrderSampler: shard_starts must increase, got " +
                  std::to_string(starts_[i - 1]) + " then " + std::to_string(starts_[i]));
    }
  }
  if (size_ <= starts_.back()) {
    throw Error("ShardOrderSampler: size " + std::to_string(size_) +
                " leaves the last shard empty (it starts at " + std::to_string(starts_.back()) +
                ")");
  }
  if (window_ < 1)
    throw Error("ShardOrderSampler: window must be >= 1, got " + std::to_string(window_));
}

std::vector<int64_t> ShardOrderSampler::Indices(int64_t epoch) const {
  if (epoch < 0) throw Error("ShardOrderSampler: epoch must be >= 0, got " + std::to_string(epoch));
  Rng rng(seed_, static_cast<uint64_t>(epoch), 0, kShardOrderStream);
  // Shards in a uniform random order (Fisher-Yates).
  std::vector<int64_t> shards(starts_.size());
  std::iota(shards.begin(), shards.end(), int64_t{0});
  for (size_t i = shards.size(); i > 1; --i) {
    std::swap(shards[i - 1], shards[rng.UniformInt(i)]);
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(size_));
  std::vector<int64_t> buffer;
  buffer.reserve(static_cast<size_t>(std::min(window_, size_)));
  for (int64_t shard : shards) {
    const size_t s = static_cast<size_t>(shard);
    const int64_t end = s + 1 < starts_.size() ? starts_[s + 1] : size_;
    for (int64_t record = starts_[s]; record < end; ++record) {
      if (static_cast<int64_t>(buffer.size()) < window_) {
        buffer.push_back(record);
        continue;
      }
      const size_t pick = rng.UniformInt(buffer.size());
      out.push_back(buffer[pick]);
      buffer[pick] = record;
    }
  }
  // The rest in random order.
  for (size_t i = buffer.size(); i > 1; --i) {
    std::swap(buffer[i - 1], buffer[rng.UniformInt(i)]);
  }
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}

}  // namespace feedline::storage
