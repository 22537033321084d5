#include <map>
#include <string>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "src/data/sampler_rng.h"

namespace feedline {

ClassBalancedSampler::ClassBalancedSampler(const std::vector<int64_t>& labels, uint64_t seed,
                                           std::optional<int64_t> num_samples)
    : num_samples_(num_samples.value_or(static_cast<int64_t>(labels.size()))), seed_(seed) {
  if (labels.empty()) throw Error("ClassBalancedSampler: labels must not be empty");
  if (num_samples.has_value() && *num_samples < 1) {
    throw Error("ClassBalancedSampler: num_samples must be >= 1, got " +
                std::to_string(*num_samples));
  }
  // Classes in ascending label order, so the plan does not depend on the
  // order in which labels first appear.
  std::map<int64_t, std::vector<int64_t>> by_label;
  for (size_t i = 0; i < labels.size(); ++i) {
    by_label[labels[i]].push_back(static_cast<int64_t>(i));
  }
  members_.reserve(by_label.size());
  for (auto& [label, members] : by_label) members_.push_back(std::move(members));
}

std::vector<int64_t> ClassBalancedSampler::Indices(int64_t epoch) const {
  Rng rng = internal::SamplerRng(seed_, epoch, internal::SamplerStream::kClassBalanced);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  for (int64_t k = 0; k < num_samples_; ++k) {
    const std::vector<int64_t>& members = members_[rng.UniformInt(members_.size())];
    out.push_back(members[rng.UniformInt(members.size())]);
  }
  return out;
}

}  // namespace feedline
