#include <numeric>
#include <string>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "src/data/fixed_batches.h"
#include "src/data/sampler_rng.h"

namespace feedline {

DistributedBatchSampler::DistributedBatchSampler(int64_t dataset_size, int64_t batch_size,
                                                 int64_t num_replicas, int64_t rank, bool shuffle,
                                                 bool drop_last, uint64_t seed)
    : n_(dataset_size),
      batch_size_(batch_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed),
      num_samples_(0) {
  if (dataset_size < 0) {
    throw Error("DistributedBatchSampler: dataset_size must be >= 0, got " +
                std::to_string(dataset_size));
  }
  if (batch_size < 1) {
    throw Error("DistributedBatchSampler: batch_size must be >= 1, got " +
                std::to_string(batch_size));
  }
  if (num_replicas < 1) {
    throw Error("DistributedBatchSampler: num_replicas must be >= 1, got " +
                std::to_string(num_replicas));
  }
  if (rank < 0 || rank >= num_replicas) {
    throw IndexError("DistributedBatchSampler: rank must be in [0, " +
                     std::to_string(num_replicas) + "), got " + std::to_string(rank));
  }
  num_samples_ = (n_ + num_replicas_ - 1) / num_replicas_;
}

int64_t DistributedBatchSampler::size() const {
  // Paddle's __len__: (num_samples + (not drop_last) * (bs - 1)) // bs.
  return internal::NumFixedBatches(num_samples_, batch_size_, drop_last_);
}

std::optional<int64_t> DistributedBatchSampler::pinned_epoch() const {
  const int64_t epoch = pinned_epoch_.load();
  if (epoch < 0) return std::nullopt;
  return epoch;
}

std::vector<int64_t> DistributedBatchSampler::RankIndices(int64_t epoch) const {
  internal::CheckEpoch(epoch);
  const int64_t total = num_samples_ * num_replicas_;

  // 1. The global order, the same on every rank.
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle_) {
    Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kDistributed);
    internal::Shuffle(order, rng);
  }

  // 2. Padded to total with its own head, cycling when padding > n.
  order.reserve(static_cast<size_t>(total));
  for (int64_t k = 0; static_cast<int64_t>(order.size()) < total; ++k) {
    order.push_back(order[static_cast<size_t>(k % n_)]);
  }

  // 3. Paddle's split: batch-sized blocks dealt round-robin, then an equal
  // slice of the remainder that does not fill a block for every rank.
  // When a block exceeds a rank's share, the whole order is remainder
  // (and batch_size * R is never formed, so it cannot overflow).
  const int64_t tail = batch_size_ > num_samples_ ? total : total % (batch_size_ * num_replicas_);
  const int64_t tail_per_rank = tail / num_replicas_;  // exact: both are multiples of R
  std::vector<int64_t> local;
  local.reserve(static_cast<size_t>(num_samples_));
  if (tail < total) {
    const int64_t round = batch_size_ * num_replicas_;
    for (int64_t begin = rank_ * batch_size_; begin < total - tail; begin += round) {
      local.insert(local.end(), order.begin() + begin, order.begin() + begin + batch_size_);
    }
  }
  const int64_t tail_begin = total - tail + rank_ * tail_per_rank;
  local.insert(local.end(), order.begin() + tail_begin, order.begin() + tail_begin + tail_per_rank);
  return local;
}

EpochPlan DistributedBatchSampler::Plan(int64_t epoch) const {
  return internal::CutFixedBatches(RankIndices(epoch), batch_size_, drop_last_);
}

}  // namespace feedline
