// Samplers: the order in which an epoch visits a dataset's indices
// (paddle.io.Sampler and its subclasses).
//
// A sampler is a pure function of the epoch: Indices(epoch) gives the same
// order every time it is asked, which is what makes resume and worker-count
// invariance exact. Random samplers draw from Rng(seed, epoch, ...).
//
// Thread safety: samplers are immutable after construction; all methods are
// const and may be called from any thread.
//
// Example:
//   RandomSampler sampler(dataset->size(), /*seed=*/1);
//   std::vector<int64_t> order = sampler.Indices(/*epoch=*/3);
#ifndef FEEDLINE_SAMPLER_H_
#define FEEDLINE_SAMPLER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "feedline/export.h"

namespace feedline {

// The interface for custom samplers.
class FEEDLINE_EXPORT Sampler {
 public:
  virtual ~Sampler() = default;
  // Number of indices one epoch yields.
  virtual int64_t size() const = 0;
  // The indices of `epoch`, in order.
  virtual std::vector<int64_t> Indices(int64_t epoch) const = 0;
};

// 0, 1, ..., n-1 (paddle.io.SequenceSampler, torch SequentialSampler).
class FEEDLINE_EXPORT SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);  // throws Error if n < 0
  int64_t size() const override { return n_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

// A random order of [0, n), new every epoch and a pure function of
// (seed, epoch). Without replacement it is a permutation (of num_samples
// indices when given: the first num_samples of a permutation, repeated
// permutations if num_samples > n); with replacement, num_samples (default n)
// independent uniform draws. Throws Error if n < 0, num_samples < 1, or
// num_samples > 0 with n == 0.
class FEEDLINE_EXPORT RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, uint64_t seed, bool replacement = false,
                std::optional<int64_t> num_samples = std::nullopt);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;

 private:
  int64_t n_;
  uint64_t seed_;
  bool replacement_;
  int64_t num_samples_;
};

// A random permutation of the given indices each epoch. Throws IndexError if
// an index is negative.
class FEEDLINE_EXPORT SubsetRandomSampler : public Sampler {
 public:
  SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  std::vector<int64_t> Indices(int64_t epoch) const override;

 private:
  std::vector<int64_t> indices_;
  uint64_t seed_;
};

// num_samples draws of index i with probability weights[i] / sum(weights).
// Without replacement, the draws are successive: each picks among the
// indices not yet drawn, proportionally to their weights. Throws Error if
// weights is empty, a weight is negative or not finite, all are zero,
// num_samples < 1, or (without replacement) num_samples exceeds the number
// of non-zero weights.
class FEEDLINE_EXPORT WeightedRandomSampler : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, uint64_t seed,
                        bool replacement = true);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;

 private:
  std::vector<double> cumulative_;  // prefix sums of the weights
  std::vector<double> weights_;
  int64_t num_samples_;
  uint64_t seed_;
  bool replacement_;
};

// Every class equally likely whatever its size: each draw picks a class
// uniformly, then a sample of that class uniformly (with replacement).
// labels[i] is the class of index i. num_samples defaults to labels.size().
// Throws Error if labels is empty or num_samples < 1.
class FEEDLINE_EXPORT ClassBalancedSampler : public Sampler {
 public:
  ClassBalancedSampler(const std::vector<int64_t>& labels, uint64_t seed,
                       std::optional<int64_t> num_samples = std::nullopt);
  int64_t size() const override { return num_samples_; }
  std::vector<int64_t> Indices(int64_t epoch) const override;

 private:
  std::vector<std::vector<int64_t>> members_;  // indices per non-empty class
  int64_t num_samples_;
  uint64_t seed_;
};

}  // namespace feedline

#endif  // FEEDLINE_SAMPLER_H_
