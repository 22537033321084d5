#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"
#include "feedline/error.h"
#include "src/data/sampler_rng.h"

namespace feedline {
namespace {

std::vector<int64_t> ReadLengths(const Dataset& dataset) {
  const int64_t n = dataset.size();
  std::vector<int64_t> lengths(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lengths[static_cast<size_t>(i)] = dataset.Length(i);
  return lengths;
}

}  // namespace

DynamicBatchSampler::DynamicBatchSampler(const Dataset& dataset, Options options)
    : DynamicBatchSampler(ReadLengths(dataset), options) {}

DynamicBatchSampler::DynamicBatchSampler(std::vector<int64_t> lengths, Options options)
    : lengths_(std::move(lengths)), options_(options) {
  if (options_.max_tokens < 1) {
    throw Error("DynamicBatchSampler: max_tokens must be >= 1, got " +
                std::to_string(options_.max_tokens));
  }
  if (options_.max_batch_size < 0) {
    throw Error("DynamicBatchSampler: max_batch_size must be >= 0 (0: no cap), got " +
                std::to_string(options_.max_batch_size));
  }
  if (options_.bucket_size < 0) {
    throw Error("DynamicBatchSampler: bucket_size must be >= 0 (0: whole epoch), got " +
                std::to_string(options_.bucket_size));
  }
  for (size_t i = 0; i < lengths_.size(); ++i) {
    if (lengths_[i] < 0) {
      throw Error("DynamicBatchSampler: the length of sample " + std::to_string(i) +
                  " must be >= 0, got " + std::to_string(lengths_[i]));
    }
  }
  num_batches_epoch0_ = Plan(0).num_batches();
}

int64_t DynamicBatchSampler::size() const { return num_batches_epoch0_; }

EpochPlan DynamicBatchSampler::Plan(int64_t epoch) const {
  internal::CheckEpoch(epoch);
  const size_t n = lengths_.size();

  // 1. The visiting order: shuffled, or 0..n-1.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle) {
    Rng rng = internal::SamplerRng(options_.seed, epoch, internal::SamplerStream::kDynamicOrder);
    internal::Shuffle(order, rng);
  }

  // 2. Within each bucket, sort by length and cut greedily: a sample joins
  // the open batch unless that would break the token budget or the batch cap.
  // Batches never span buckets. An empty sample still takes a row, so it
  // counts as length 1; otherwise empty samples could fill one unbounded batch.
  const size_t bucket = options_.bucket_size > 0 ? static_cast<size_t>(options_.bucket_size) : n;
  auto cost_length = [this](int64_t index) {
    return std::max<int64_t>(lengths_[static_cast<size_t>(index)], 1);
  };
  std::vector<int64_t> starts;  // offset in `order` of every batch
  for (size_t begin = 0; begin < n; begin += bucket) {
    const auto first = order.begin() + static_cast<ptrdiff_t>(begin);
    const auto last = order.begin() + static_cast<ptrdiff_t>(std::min(n, begin + bucket));
    // Stable, so equal lengths keep the (shuffled) visiting order.
    std::stable_sort(first, last, [this](int64_t a, int64_t b) {
      return lengths_[static_cast<size_t>(a)] < lengths_[static_cast<size_t>(b)];
    });
    int64_t count = 0;
    int64_t longest = 0;
    for (auto it = first; it != last; ++it) {
      const int64_t length = std::max(longest, cost_length(*it));
      const bool over_budget = (count + 1) > options_.max_tokens / length;
      const bool over_cap = options_.max_batch_size > 0 && count + 1 > options_.max_batch_size;
      if (count == 0 || over_budget || over_cap) {
        starts.push_back(it - order.begin());
        count = 1;
        longest = cost_length(*it);
      } else {
        ++count;
        longest = length;
      }
    }
  }
  starts.push_back(static_cast<int64_t>(n));

  // 3. The batch order: shuffled, or by bucket then ascending length.
  const int64_t num_batches = static_cast<int64_t>(starts.size()) - 1;
  std::vector<int64_t> batch_order(static_cast<size_t>(num_batches));
  std::iota(batch_order.begin(), batch_order.end(), int64_t{0});
  if (options_.shuffle) {
    Rng rng = internal::SamplerRng(options_.seed, epoch, internal::SamplerStream::kDynamicBatches);
    internal::Shuffle(batch_order, rng);
  }
  EpochPlan plan;
  plan.indices.reserve(n);
  plan.offsets.reserve(static_cast<size_t>(num_batches) + 1);
  const std::span<const int64_t> all(order);
  for (int64_t b : batch_order) {
    const int64_t begin = starts[static_cast<size_t>(b)];
    const int64_t end = starts[static_cast<size_t>(b) + 1];
    plan.Add(all.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
  }
  return plan;
}

}  // namespace feedline
