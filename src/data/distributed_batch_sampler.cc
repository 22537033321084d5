#include <algorithm>
#include <numeric>
#include <string>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "src/data/fixed_batches.h"
#include "src/data/sampler_rng.h"

namespace feedline {
namespace {

// Paddle's split of a padded order (size a multiple of R) for one rank:
// batch-sized blocks dealt round-robin, then an equal slice of the remainder
// that does not fill a block for every rank. When a block exceeds a rank's
// share the whole order is remainder (and batch_size * R is never formed, so
// it cannot overflow).
std::vector<int64_t> PaddleSplitPadded(const std::vector<int64_t>& padded, int64_t batch_size,
                                       int64_t replicas, int64_t rank) {
  const int64_t total = static_cast<int64_t>(padded.size());
  const int64_t share = total / replicas;
  const int64_t tail = batch_size > share ? total : total % (batch_size * replicas);
  const int64_t tail_per_rank = tail / replicas;  // exact: both are multiples of R
  std::vector<int64_t> local;
  local.reserve(static_cast<size_t>(share));
  if (tail < total) {
    const int64_t round = batch_size * replicas;
    for (int64_t begin = rank * batch_size; begin < total - tail; begin += round) {
      local.insert(local.end(), padded.begin() + begin, padded.begin() + begin + batch_size);
    }
  }
  const int64_t tail_begin = total - tail + rank * tail_per_rank;
  local.insert(local.end(), padded.begin() + tail_begin,
               padded.begin() + tail_begin + tail_per_rank);
  return local;
}

// Without padding: block j of batch_size goes to rank j % R; the last block
// may be short.
std::vector<int64_t> PaddleSplitExact(const std::vector<int64_t>& order, int64_t batch_size,
                                      int64_t replicas, int64_t rank) {
  const int64_t m = static_cast<int64_t>(order.size());
  std::vector<int64_t> local;
  const int64_t blocks = m == 0 ? 0 : (m - 1) / batch_size + 1;
  for (int64_t j = rank; j < blocks; j += replicas) {
    const int64_t begin = j * batch_size;  // < m: no overflow
    const int64_t end = begin + std::min(batch_size, m - begin);
    local.insert(local.end(), order.begin() + begin, order.begin() + end);
  }
  return local;
}

// torch's DistributedSampler: order[rank::R].
std::vector<int64_t> Stride(const std::vector<int64_t>& order, int64_t replicas, int64_t rank) {
  std::vector<int64_t> local;
  const int64_t m = static_cast<int64_t>(order.size());
  local.reserve(static_cast<size_t>(m / replicas + 1));
  for (int64_t i = rank; i < m; i += replicas) local.push_back(order[static_cast<size_t>(i)]);
  return local;
}

}  // namespace

DistributedBatchSampler::DistributedBatchSampler(int64_t dataset_size, int64_t batch_size,
                                                 int64_t num_replicas, int64_t rank, bool shuffle,
                                                 bool drop_last, uint64_t seed)
    : DistributedBatchSampler(dataset_size, batch_size, num_replicas, rank,
                              Options{shuffle, drop_last, seed}) {}

DistributedBatchSampler::DistributedBatchSampler(int64_t dataset_size, int64_t batch_size,
                                                 int64_t num_replicas, int64_t rank,
                                                 Options options)
    : n_(dataset_size),
      batch_size_(batch_size),
      num_replicas_(num_replicas),
      rank_(rank),
      options_(options),
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
  if (options.resume_epoch >= 0) SetResume(options.resume_epoch, options.resume_position);
  num_samples_ = LocalCount(n_, rank_);
}

int64_t DistributedBatchSampler::LocalCount(int64_t m, int64_t rank) const {
  const int64_t r = num_replicas_;
  if (options_.pad) return (m + r - 1) / r;
  if (options_.partition == DistributedPartition::kTorch) return m / r + (rank < m % r ? 1 : 0);
  // Paddle without padding: full blocks j with j % R == rank, plus the short
  // last block when it falls to this rank.
  const int64_t full_blocks = m / batch_size_;
  const int64_t mine = full_blocks / r + (rank < full_blocks % r ? 1 : 0);
  const int64_t short_block = m % batch_size_;
  return mine * batch_size_ + (short_block > 0 && full_blocks % r == rank ? short_block : 0);
}

int64_t DistributedBatchSampler::MaxBatches(int64_t m) const {
  // Rank 0 always has the most samples, and its batches are full but the last.
  return internal::NumFixedBatches(LocalCount(m, 0), batch_size_, options_.drop_last);
}

int64_t DistributedBatchSampler::size() const {
  // Paddle's __len__: (num_samples + (not drop_last) * (bs - 1)) // bs.
  return internal::NumFixedBatches(num_samples_, batch_size_, options_.drop_last);
}

std::optional<int64_t> DistributedBatchSampler::pinned_epoch() const {
  const int64_t epoch = pinned_epoch_.load();
  if (epoch < 0) return std::nullopt;
  return epoch;
}

void DistributedBatchSampler::ResumeFrom(int64_t epoch, int64_t position) {
  SetResume(epoch, position);
  pinned_epoch_.store(epoch);
}

void DistributedBatchSampler::SetResume(int64_t epoch, int64_t position) {
  internal::CheckEpoch(epoch);
  if (position < 0 || position > n_) {
    throw Error("DistributedBatchSampler: resume_position must be in [0, dataset_size = " +
                std::to_string(n_) + "], got " + std::to_string(position));
  }
  // Between epochs, as documented: no Plan reads the pair meanwhile.
  resume_position_.store(position);
  resume_epoch_.store(epoch);
}

int64_t DistributedBatchSampler::Consumed(int64_t epoch) const {
  return epoch == resume_epoch_.load() ? resume_position_.load() : 0;
}

std::vector<int64_t> DistributedBatchSampler::RankPositions(int64_t m) const {
  if (m == 0) return {};
  const bool paddle = options_.partition == DistributedPartition::kPaddle;
  // Position p of the (padded) order; p >= m is padding, the sample at p % m.
  const int64_t total = options_.pad ? (m + num_replicas_ - 1) / num_replicas_ * num_replicas_ : m;
  std::vector<int64_t> positions(static_cast<size_t>(total));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  if (!options_.pad) {
    return paddle ? PaddleSplitExact(positions, batch_size_, num_replicas_, rank_)
                  : Stride(positions, num_replicas_, rank_);
  }
  return paddle ? PaddleSplitPadded(positions, batch_size_, num_replicas_, rank_)
                : Stride(positions, num_replicas_, rank_);
}

std::vector<int64_t> DistributedBatchSampler::RankIndices(int64_t epoch) const {
  internal::CheckEpoch(epoch);
  // 1. The global order, the same on every rank and for every world size;
  // a resumed epoch keeps only what no rank has consumed.
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle) {
    Rng rng = internal::SamplerRng(options_.seed, epoch, internal::SamplerStream::kDistributed);
    internal::Shuffle(order, rng);
  }
  const int64_t consumed = Consumed(epoch);
  if (consumed > 0) order.erase(order.begin(), order.begin() + consumed);
  const int64_t m = static_cast<int64_t>(order.size());
  // 2. Padded with the order's own head (cycling when padding > m), and
  // 3. split: both through the positions.
  std::vector<int64_t> local = RankPositions(m);
  for (int64_t& p : local) p = order[static_cast<size_t>(p % m)];
  return local;
}

std::vector<uint8_t> DistributedBatchSampler::ValidMask(int64_t epoch) const {
  internal::CheckEpoch(epoch);
  const int64_t m = n_ - Consumed(epoch);
  const std::vector<int64_t> positions = RankPositions(m);
  // Aligned with Plan(epoch): drop_last cuts the final short batch.
  const int64_t size = static_cast<int64_t>(positions.size());
  const size_t rows = static_cast<size_t>(options_.drop_last ? size - size % batch_size_ : size);
  std::vector<uint8_t> mask(rows);
  for (size_t k = 0; k < rows; ++k) mask[k] = positions[k] < m ? 1 : 0;
  return mask;
}

int64_t DistributedBatchSampler::GlobalPosition(int64_t epoch, int64_t batches_done) const {
  internal::CheckEpoch(epoch);
  if (batches_done < 0) {
    throw Error("DistributedBatchSampler: batches_done must be >= 0, got " +
                std::to_string(batches_done));
  }
  const int64_t consumed = Consumed(epoch);
  const int64_t m = n_ - consumed;
  // Every rank has finished: the epoch is complete (drop_last's dropped
  // batches included: they will not come).
  if (batches_done >= MaxBatches(m)) return n_;
  if (batches_done == 0) return consumed;
  // Before the last batch every rank's k batches are full, and both splits
  // hand out the order's first k * B * R positions in k rounds (the padded
  // tail, which Paddle splits unevenly, only ever sits in the last batch).
  // Here rank 0 has more than k >= 1 batches, so B * R < m + R: no overflow.
  const int64_t round = batch_size_ * num_replicas_;
  return consumed + std::min(m, batches_done * round);
}

EpochPlan DistributedBatchSampler::Plan(int64_t epoch) const {
  return internal::CutFixedBatches(RankIndices(epoch), batch_size_, options_.drop_last);
}

}  // namespace feedline
