#include "feedline/grouped_batch_sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>

#include "feedline/error.h"

namespace feedline {

GroupedBatchSampler::GroupedBatchSampler(std::shared_ptr<const Sampler> sampler,
                                         std::vector<int64_t> group_ids, int64_t batch_size)
    : sampler_(std::move(sampler)), group_ids_(std::move(group_ids)), batch_size_(batch_size) {
  if (!sampler_) throw Error("GroupedBatchSampler: sampler must not be null");
  if (batch_size < 1) {
    throw Error("GroupedBatchSampler: batch_size must be >= 1, got " + std::to_string(batch_size));
  }
}

int64_t GroupedBatchSampler::size() const { return sampler_->size() / batch_size_; }

EpochPlan GroupedBatchSampler::Plan(int64_t epoch) const {
  const std::vector<int64_t> indices = sampler_->Indices(epoch);
  struct Group {
    std::vector<int64_t> buffer;  // the batch being filled
    std::vector<int64_t> seen;    // every index of the group this epoch
  };
  std::unordered_map<int64_t, Group> groups;
  // The groups in the order their buffers were last started: a filled
  // buffer starts again at the end (the references' dict of buffers, whose
  // full entry is deleted and made again).
  std::vector<int64_t> started;
  EpochPlan plan;
  for (const int64_t index : indices) {
    if (index < 0 || index >= static_cast<int64_t>(group_ids_.size())) {
      throw Error("GroupedBatchSampler: the sampler gave index " + std::to_string(index) +
                  ", which has no group (" + std::to_string(group_ids_.size()) + " group ids)");
    }
    const int64_t id = group_ids_[static_cast<size_t>(index)];
    auto [it, made] = groups.try_emplace(id);
    if (made) started.push_back(id);
    Group& group = it->second;
    group.buffer.push_back(index);
    group.seen.push_back(index);
    if (static_cast<int64_t>(group.buffer.size()) == batch_size_) {
      plan.Add(group.buffer);
      group.buffer.clear();
      started.erase(std::find(started.begin(), started.end(), id));
      started.push_back(id);
    }
  }
  int64_t remaining = size() - plan.num_batches();
  if (remaining <= 0) return plan;
  // The fullest buffers first, ties in the order they were started.
  std::stable_sort(started.begin(), started.end(), [&](int64_t a, int64_t b) {
    return groups[a].buffer.size() > groups[b].buffer.size();
  });
  for (const int64_t id : started) {
    Group& group = groups[id];
    for (size_t k = 0; static_cast<int64_t>(group.buffer.size()) < batch_size_; ++k) {
      group.buffer.push_back(group.seen[k % group.seen.size()]);
    }
    plan.Add(group.buffer);
    if (--remaining == 0) break;
  }
  return plan;
}

std::vector<int64_t> AspectRatioGroups(std::span<const int64_t> widths,
                                       std::span<const int64_t> heights, int k) {
  if (widths.size() != heights.size()) {
    throw Error("AspectRatioGroups: " + std::to_string(widths.size()) + " widths but " +
                std::to_string(heights.size()) + " heights");
  }
  if (k < 0) throw Error("AspectRatioGroups: k must be >= 0, got " + std::to_string(k));
  // 2 ** numpy.linspace(-1, 1, 2k + 1), as the references compute them; for
  // k = 0 the one bin 1.0 (wider or taller than square).
  const int count = 2 * k + 1;
  std::vector<double> bins(static_cast<size_t>(count), 1.0);
  if (k > 0) {
    const double step = 2.0 / (count - 1);
    for (int i = 0; i < count; ++i) {
      bins[static_cast<size_t>(i)] = std::pow(2.0, i == count - 1 ? 1.0 : -1.0 + i * step);
    }
  }
  std::vector<int64_t> groups(widths.size());
  for (size_t i = 0; i < widths.size(); ++i) {
    if (heights[i] <= 0) {
      throw Error("AspectRatioGroups: image " + std::to_string(i) + " has height " +
                  std::to_string(heights[i]) +
                  (heights[i] == 0 ? " (its size is unknown: a VOC annotation without <size>, "
                                     "a COCO image without \"height\"?)"
                                   : ""));
    }
    const double ratio = static_cast<double>(widths[i]) / static_cast<double>(heights[i]);
    // numpy.digitize (increasing bins, right=False): the i with
    // bins[i - 1] <= ratio < bins[i].
    groups[i] = std::upper_bound(bins.begin(), bins.end(), ratio) - bins.begin();
  }
  return groups;
}

}  // namespace feedline
