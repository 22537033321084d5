#include "feedline/hard_example_sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "feedline/error.h"
#include "src/data/double_text.h"
#include "src/data/sampler_rng.h"

namespace feedline {
namespace {

bool ValidScore(double value) { return std::isfinite(value) && value >= 0.0; }

}  // namespace

HardExampleSampler::HardExampleSampler(int64_t n, uint64_t seed, Options options)
    : n_(n),
      seed_(seed),
      num_samples_(options.num_samples.value_or(n)),
      decay_(options.decay),
      floor_(options.floor) {
  if (n < 1) throw Error("HardExampleSampler: n must be >= 1, got " + std::to_string(n));
  if (num_samples_ < 1) {
    throw Error("HardExampleSampler: num_samples must be >= 1, got " +
                std::to_string(num_samples_));
  }
  if (!(decay_ >= 0.0 && decay_ < 1.0)) {
    throw Error("HardExampleSampler: decay must be in [0, 1), got " + internal::DoubleText(decay_));
  }
  if (!(floor_ > 0.0 && floor_ <= 1.0)) {
    throw Error("HardExampleSampler: floor must be in (0, 1] (0 would let samples starve), got " +
                internal::DoubleText(floor_));
  }
  scores_.assign(static_cast<size_t>(n), 0.0);
  seen_.assign(static_cast<size_t>(n), 0);
}

std::vector<double> HardExampleSampler::ProbabilitiesLocked() const {
  const size_t n = static_cast<size_t>(n_);
  // Not yet reported: as hard as the hardest seen, so it is drawn early.
  double unseen = 0.0;
  bool any_seen = false;
  for (size_t i = 0; i < n; ++i) {
    if (seen_[i]) {
      unseen = std::max(unseen, scores_[i]);
      any_seen = true;
    }
  }
  if (!any_seen) unseen = 1.0;
  std::vector<double> p(n);
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    p[i] = seen_[i] ? scores_[i] : unseen;
    total += p[i];
  }
  const double even = 1.0 / static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) {
    // Every score 0 (or a sum overflowing): uniform.
    const double share = total > 0.0 && std::isfinite(total) ? p[i] / total : even;
    p[i] = floor_ * even + (1.0 - floor_) * share;
  }
  return p;
}

std::vector<double> HardExampleSampler::Probabilities() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ProbabilitiesLocked();
}

std::vector<int64_t> HardExampleSampler::Indices(int64_t epoch) const {
  internal::CheckEpoch(epoch);
  std::vector<double> cumulative;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch != planned_epoch_) {
      planned_ = ProbabilitiesLocked();
      planned_epoch_ = epoch;
    }
    cumulative = planned_;
  }
  double total = 0.0;
  for (double& c : cumulative) {
    total += c;
    c = total;
  }
  // Inverse transform sampling: the first prefix sum above u. Every
  // probability is > 0 (the floor), so no index is skipped by ties.
  Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kHardExample);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  for (int64_t k = 0; k < num_samples_; ++k) {
    const double u = rng.Uniform() * total;
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
    const auto i = std::min<ptrdiff_t>(it - cumulative.begin(), n_ - 1);  // rounding at the top
    out.push_back(static_cast<int64_t>(i));
  }
  return out;
}

void HardExampleSampler::Update(std::span<const int64_t> indices, std::span<const double> losses) {
  if (indices.size() != losses.size()) {
    throw Error("HardExampleSampler.update: indices and losses must have the same length, got " +
                std::to_string(indices.size()) + " indices and " + std::to_string(losses.size()) +
                " losses");
  }
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0 || indices[k] >= n_) {
      throw IndexError("HardExampleSampler.update: indices[" + std::to_string(k) + "] is " +
                       std::to_string(indices[k]) + ", outside [0, " + std::to_string(n_) + ")");
    }
    if (!ValidScore(losses[k])) {
      throw Error("HardExampleSampler.update: losses[" + std::to_string(k) +
                  "] must be finite and >= 0, got " + internal::DoubleText(losses[k]));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t k = 0; k < indices.size(); ++k) {
    const auto i = static_cast<size_t>(indices[k]);
    scores_[i] = seen_[i] ? decay_ * scores_[i] + (1.0 - decay_) * losses[k] : losses[k];
    seen_[i] = 1;
  }
}

HardExampleSampler::State HardExampleSampler::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return State{scores_, seen_, planned_epoch_, planned_};
}

void HardExampleSampler::Restore(const State& state) {
  const auto n = static_cast<size_t>(n_);
  auto fail = [](const std::string& why) {
    throw Error("HardExampleSampler.restore: " + why);
  };
  if (state.scores.size() != n) {
    fail("scores has " + std::to_string(state.scores.size()) + " entries, this sampler has " +
         std::to_string(n_) + " samples");
  }
  if (state.seen.size() != n) {
    fail("seen has " + std::to_string(state.seen.size()) + " entries, this sampler has " +
         std::to_string(n_) + " samples");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!ValidScore(state.scores[i])) {
      fail("scores[" + std::to_string(i) + "] must be finite and >= 0, got " +
           internal::DoubleText(state.scores[i]));
    }
  }
  if (state.planned_epoch < -1) {
    fail("planned_epoch must be >= -1, got " + std::to_string(state.planned_epoch));
  }
  if (state.planned_epoch >= 0) {
    if (state.planned.size() != n) {
      fail("planned has " + std::to_string(state.planned.size()) + " entries, this sampler has " +
           std::to_string(n_) + " samples");
    }
    for (size_t i = 0; i < n; ++i) {
      if (!(std::isfinite(state.planned[i]) && state.planned[i] > 0.0)) {
        fail("planned[" + std::to_string(i) + "] must be a probability > 0, got " +
             internal::DoubleText(state.planned[i]));
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  scores_ = state.scores;
  seen_ = state.seen;
  for (uint8_t& s : seen_) s = s != 0 ? 1 : 0;
  planned_epoch_ = state.planned_epoch;
  planned_ = state.planned_epoch >= 0 ? state.planned : std::vector<double>{};
}

}  // namespace feedline
