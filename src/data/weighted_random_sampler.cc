#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "src/data/double_text.h"
#include "src/data/sampler_rng.h"

namespace feedline {
WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples,
                                             uint64_t seed, bool replacement)
    : weights_(std::move(weights)),
      num_samples_(num_samples),
      seed_(seed),
      replacement_(replacement) {
  if (weights_.empty()) throw Error("WeightedRandomSampler: weights must not be empty");
  if (num_samples < 1) {
    throw Error("WeightedRandomSampler: num_samples must be >= 1, got " +
                std::to_string(num_samples));
  }
  int64_t nonzero = 0;
  double total = 0.0;
  cumulative_.reserve(weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i) {
    const double w = weights_[i];
    if (!std::isfinite(w) || w < 0.0) {
      throw Error("WeightedRandomSampler: weights[" + std::to_string(i) +
                  "] must be finite and >= 0, got " + internal::DoubleText(w));
    }
    if (w > 0.0) ++nonzero;
    total += w;
    cumulative_.push_back(total);
  }
  if (nonzero == 0) throw Error("WeightedRandomSampler: all weights are zero");
  if (!std::isfinite(total)) throw Error("WeightedRandomSampler: the weights sum to infinity");
  if (!replacement_ && num_samples_ > nonzero) {
    throw Error(
        "WeightedRandomSampler: without replacement num_samples must be <= the number "
        "of non-zero weights (" +
        std::to_string(nonzero) + "), got " + std::to_string(num_samples_));
  }
}

std::vector<int64_t> WeightedRandomSampler::Indices(int64_t epoch) const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (replacement_) {
    // Inverse transform sampling: the first prefix sum above u. A zero weight
    // repeats the prefix sum before it, so it is never the first one above u.
    Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kWeighted);
    const double total = cumulative_.back();
    for (int64_t k = 0; k < num_samples_; ++k) {
      const double u = rng.Uniform() * total;
      size_t i = static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
                                     cumulative_.begin());
      if (i == cumulative_.size()) {
        // Only reachable through rounding: u's interval is the last non-zero weight's.
        i = cumulative_.size() - 1;
        while (weights_[i] <= 0.0) --i;
      }
      out.push_back(static_cast<int64_t>(i));
    }
    return out;
  }
  // Without replacement: an exponential race (Efraimidis-Spirakis). Index i
  // finishes at E_i / w_i with E_i ~ Exp(1); the order of arrival has the law
  // of successive draws without replacement, each proportional to the
  // weights still in play.
  Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kWeightedNoReplacement);
  std::vector<std::pair<double, int64_t>> arrivals;
  arrivals.reserve(weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i) {
    const double u = rng.Uniform();  // drawn for every index, so keys do not shift
    if (weights_[i] <= 0.0) continue;
    arrivals.emplace_back(-std::log1p(-u) / weights_[i], static_cast<int64_t>(i));
  }
  // Ties (vanishingly rare) break by index, so the order is fully determined.
  std::partial_sort(arrivals.begin(), arrivals.begin() + num_samples_, arrivals.end());
  for (int64_t k = 0; k < num_samples_; ++k) out.push_back(arrivals[static_cast<size_t>(k)].second);
  return out;
}

}  // namespace feedline
