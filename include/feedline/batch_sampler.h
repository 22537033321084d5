// Batch samplers: how an epoch's indices are grouped into batches
// (paddle.io.BatchSampler, DistributedBatchSampler), plus dynamic batching by
// length under a token budget.
//
// A batch sampler is a pure function of the epoch: Plan(epoch) returns every
// batch of that epoch at once, flattened, so the loader can hand out samples
// of later batches early and can resume at any batch.
//
// Thread safety: immutable after construction, except
// DistributedBatchSampler::set_epoch, which is safe to call between epochs.
//
// Example:
//   FixedBatchSampler batches(std::make_shared<RandomSampler>(n, 1), 64, false);
//   EpochPlan plan = batches.Plan(0);
//   for (int64_t b = 0; b < plan.num_batches(); ++b) Use(plan.batch(b));
#ifndef FEEDLINE_BATCH_SAMPLER_H_
#define FEEDLINE_BATCH_SAMPLER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "feedline/export.h"
#include "feedline/sampler.h"

namespace feedline {

class Dataset;

// The batches of one epoch: batch b is indices[offsets[b], offsets[b+1]).
struct FEEDLINE_EXPORT EpochPlan {
  std::vector<int64_t> indices;
  std::vector<int64_t> offsets{0};

  int64_t num_batches() const { return static_cast<int64_t>(offsets.size()) - 1; }
  std::span<const int64_t> batch(int64_t b) const {
    return std::span<const int64_t>(indices).subspan(
        static_cast<size_t>(offsets[static_cast<size_t>(b)]),
        static_cast<size_t>(offsets[static_cast<size_t>(b) + 1] - offsets[static_cast<size_t>(b)]));
  }
  // Appends a batch.
  void Add(std::span<const int64_t> batch_indices);
};

// The interface for batch samplers, custom ones included.
class FEEDLINE_EXPORT BatchSampler {
 public:
  virtual ~BatchSampler() = default;
  // Number of batches per epoch.
  virtual int64_t size() const = 0;
  // All batches of `epoch`.
  virtual EpochPlan Plan(int64_t epoch) const = 0;
  // An epoch set through the sampler (DistributedBatchSampler::set_epoch):
  // when set, it is the loader's epoch (its counter follows it).
  virtual std::optional<int64_t> pinned_epoch() const { return std::nullopt; }
};

// Consecutive groups of batch_size indices from a sampler; the last, shorter
// batch is dropped when drop_last. size() = ceil or floor of n / batch_size.
class FEEDLINE_EXPORT FixedBatchSampler : public BatchSampler {
 public:
  FixedBatchSampler(std::shared_ptr<const Sampler> sampler, int64_t batch_size, bool drop_last);
  int64_t size() const override;
  EpochPlan Plan(int64_t epoch) const override;

 private:
  std::shared_ptr<const Sampler> sampler_;
  int64_t batch_size_;
  bool drop_last_;
};

// Groups samples of similar length so that padding is small: each batch holds
// as many samples as fit in max_tokens, where a batch of k samples whose
// longest has length L costs k * L tokens. Samples are sorted by length within
// buckets of bucket_size (shuffled when shuffle), cut into batches under the
// budget, and the batch order is shuffled; all of it from (seed, epoch).
// Lengths come from Dataset::Length, read once at construction. A sample
// longer than max_tokens gets a batch of its own; an empty sample counts as
// length 1. max_batch_size (0 = none) caps the samples per batch.
class FEEDLINE_EXPORT DynamicBatchSampler : public BatchSampler {
 public:
  struct Options {
    int64_t max_tokens = 4096;
    int64_t max_batch_size = 0;
    int64_t bucket_size = 0;  // 0: sort the whole epoch by length
    bool shuffle = true;
    uint64_t seed = 0;
  };
  DynamicBatchSampler(const Dataset& dataset, Options options);
  DynamicBatchSampler(std::vector<int64_t> lengths, Options options);
  int64_t size() const override;  // batches of epoch 0 (the count can vary by epoch)
  EpochPlan Plan(int64_t epoch) const override;

 private:
  std::vector<int64_t> lengths_;
  Options options_;
  int64_t num_batches_epoch0_ = 0;  // size(), computed once at construction
};

// How DistributedBatchSampler deals the global order to the ranks.
enum class DistributedPartition {
  kPaddle,  // batch-sized blocks dealt round-robin (paddle.io.DistributedBatchSampler)
  kTorch,   // stride by rank: order[rank::R] (torch.utils.data.DistributedSampler)
};

// Splits an epoch across num_replicas ranks (paddle.io.DistributedBatchSampler
// by default; torch's DistributedSampler rule with partition = kTorch).
//
// Semantics (docs/samplers.md and docs/distributed.md):
//   1. The global order is 0..n-1, or with shuffle a permutation from
//      (seed, epoch). It does not depend on num_replicas or rank.
//   2. With pad (the default) it is padded to total = ceil(n / R) * R with
//      its own head (repeated if needed), so every rank gets ceil(n / R)
//      indices and the same number of batches. Paddle pads with items
//      0..pad-1 *before* shuffling, so the same samples are duplicated every
//      epoch; padding after the shuffle duplicates different samples each
//      epoch. Without shuffle the two are identical.
//   3. kPaddle: rank r takes batch-sized blocks at r*B + k*B*R, then its own
//      slice of the remainder. kTorch: rank r takes padded[r::R].
//      Both are cut into batches; drop_last drops the final short local batch.
//   Without pad (exact evaluation) nothing is duplicated: every sample goes to
//   exactly one rank. kPaddle deals the batch-sized blocks of the unpadded
//   order round-robin (the last block may be short), kTorch takes order[r::R];
//   ranks may get one batch fewer, or a short last batch.
//
// After every rank has taken the same k batches of an epoch, the samples
// consumed over all ranks are a prefix of the global order (of length
// GlobalPosition(epoch, k)), for both partitions, with or without pad. A job
// restarted with another num_replicas resumes that epoch from the prefix's
// length (Options::resume_epoch / resume_position): the rest of the global
// order is split across the new ranks by the same rule.
class FEEDLINE_EXPORT DistributedBatchSampler : public BatchSampler {
 public:
  struct Options {
    bool shuffle = false;
    bool drop_last = false;
    uint64_t seed = 0;
    DistributedPartition partition = DistributedPartition::kPaddle;
    bool pad = true;  // false: every sample exactly once over all ranks
    // Resume: the first resume_position samples of epoch resume_epoch's
    // global order were consumed (by a job of any size); Plan(resume_epoch)
    // splits only the rest. resume_epoch < 0: no resume.
    int64_t resume_epoch = -1;
    int64_t resume_position = 0;
  };

  // Throws Error / IndexError for batch_size < 1, num_replicas < 1, rank
  // outside [0, num_replicas) or resume_position outside [0, dataset_size].
  DistributedBatchSampler(int64_t dataset_size, int64_t batch_size, int64_t num_replicas,
                          int64_t rank, bool shuffle = false, bool drop_last = false,
                          uint64_t seed = 0);
  DistributedBatchSampler(int64_t dataset_size, int64_t batch_size, int64_t num_replicas,
                          int64_t rank, Options options);
  // Batches of this rank in an epoch that is not resumed.
  int64_t size() const override;
  EpochPlan Plan(int64_t epoch) const override;
  // Sets the epoch of the loader holding this sampler (Paddle's set_epoch):
  // every pass runs it, the loader reports it, and counts on from it once
  // unpinned (a negative epoch); the loader's own set_epoch must agree.
  void set_epoch(int64_t epoch) { pinned_epoch_.store(epoch); }
  std::optional<int64_t> pinned_epoch() const override;
  // Resumes `epoch` after its first `position` samples (GlobalPosition of a
  // job of any size) and pins it (set_epoch(epoch)); Options::resume_* do the
  // same at construction but pin nothing. Like set_epoch, call it between
  // epochs. Throws Error for a position
  // outside [0, dataset_size] or a negative epoch.
  void ResumeFrom(int64_t epoch, int64_t position);

  // Indices of this rank for `epoch`, before batching.
  std::vector<int64_t> RankIndices(int64_t epoch) const;
  // One flag per index of Plan(epoch): 1 for a sample's own place in the
  // global order, 0 for padding that repeats it. Over all ranks the rows
  // flagged 1 are each of the epoch's samples exactly once, so a metric
  // summed over them is exact while every rank takes the same steps (pad);
  // without pad every flag is 1.
  std::vector<uint8_t> ValidMask(int64_t epoch) const;
  // Samples of `epoch`'s global order consumed over all ranks once every rank
  // has taken `batches_done` batches of it (the resumed prefix included);
  // dataset_size once the epoch is complete. REQUIRES: batches_done >= 0.
  int64_t GlobalPosition(int64_t epoch, int64_t batches_done) const;

  // Indices of this rank in an epoch that is not resumed.
  int64_t num_samples() const { return num_samples_; }
  int64_t dataset_size() const { return n_; }
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return options_.drop_last; }
  int64_t num_replicas() const { return num_replicas_; }
  int64_t rank() const { return rank_; }
  // The options given at construction (ResumeFrom does not change them).
  const Options& options() const { return options_; }

 private:
  // The global order's first `consumed` samples are skipped.
  int64_t Consumed(int64_t epoch) const;
  // This rank's positions in an order of m samples: padding is p >= m.
  std::vector<int64_t> RankPositions(int64_t m) const;
  void SetResume(int64_t epoch, int64_t position);
  // This rank's count of an order of m samples, and its batch count; the
  // most batches any rank gets.
  int64_t LocalCount(int64_t m, int64_t rank) const;
  int64_t MaxBatches(int64_t m) const;

  int64_t n_;
  int64_t batch_size_;
  int64_t num_replicas_;
  int64_t rank_;
  Options options_;
  int64_t num_samples_;  // this rank's, in an epoch that is not resumed
  std::atomic<int64_t> pinned_epoch_{-1};
  // The resumed epoch and its consumed prefix (Options or ResumeFrom).
  std::atomic<int64_t> resume_epoch_{-1};
  std::atomic<int64_t> resume_position_{0};
};

}  // namespace feedline

#endif  // FEEDLINE_BATCH_SAMPLER_H_
