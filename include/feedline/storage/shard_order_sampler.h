// ShardOrderSampler: a shuffled order that reads shards nearly sequentially,
// for storage where random reads are slow (HDDs, network file systems).
//
// Each epoch: the shards in a random order (a uniform permutation), their
// records concatenated in file order, then passed through a shuffle buffer
// of `window` records: the buffer is filled with the first `window` records
// of that stream; each step emits a uniformly chosen record of the buffer
// and puts the stream's next record in its place; at the end the buffer is
// emptied in random order. Most reads are of records that entered the
// buffer recently, so they fall in the one or two shards being streamed
// (when window is about a shard's record count) where the page cache and
// read-ahead serve them; a record waits a geometric number of draws (mean
// `window`), so a share of about exp(-k) of the reads goes back more than k
// windows (tested).
//
// What this does to randomness: the order of shards is uniform; a record
// leaves the buffer after a geometric number of steps (mean `window`), so a
// record is emitted on average `window` positions after its place in the
// shard stream, and two records much further apart than that in the stream
// rarely swap. Records that share a shard stay close together in the epoch (a batch
// draws from about window / batch shards at once). With window >= the number
// of records, the order is a uniform permutation: the full shuffle. For the
// full shuffle with random reads use RandomSampler.
//
// A pure function of (seed, epoch), like every feedline sampler.
//
// Thread safety: immutable after construction.
//
// Example:
//   ShardOrderSampler sampler(shards.shard_starts(), shards.size(), /*window=*/4096, seed);
#ifndef FEEDLINE_STORAGE_SHARD_ORDER_SAMPLER_H_
#define FEEDLINE_STORAGE_SHARD_ORDER_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "feedline/export.h"
#include "feedline/sampler.h"

namespace feedline::storage {

class FEEDLINE_EXPORT ShardOrderSampler : public Sampler {
 public:
  // `shard_starts`: the first record of each shard, increasing from 0 (as
  // ShardDataset::shard_starts()); `size`: the number of records. Throws
  // Error if shard_starts is empty, does not start at 0, is not increasing,
  // reaches past size, or window < 1.
  ShardOrderSampler(std::vector<int64_t> shard_starts, int64_t size, int64_t window, uint64_t seed);

  int64_t size() const override { return size_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;
  int64_t window() const { return window_; }

 private:
  std::vector<int64_t> starts_;
  int64_t size_;
  int64_t window_;
  uint64_t seed_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_SHARD_ORDER_SAMPLER_H_
