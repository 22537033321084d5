// GroupedBatchSampler: batches whose samples all share a group (images of
// similar aspect ratio, so that a detection batch pads little), with the
// semantics of torchvision's detection references (GroupedBatchSampler in
// references/detection/group_by_aspect_ratio.py), so that a job moved onto
// feedline keeps its batches.
//
// Semantics, for the sampler's indices of the epoch in order:
//   1. Each index goes into its group's buffer; a buffer that reaches
//      batch_size is a batch, in the order the buffers fill.
//   2. An epoch has size() = len(sampler) / batch_size batches (rounded
//      down). If fewer came out of step 1, the unfinished buffers are
//      completed, the fullest first (ties in the order the buffers were last
//      started), each topped up with its group's indices of this epoch from
//      the first on, repeated as often as needed, until the count is reached.
//   The remainder of the fullest buffers is so never dropped, and some
//   indices are seen twice in an epoch.
//
// AspectRatioGroups gives the references' groups: each image's width /
// height against 2k + 1 bins evenly spaced in log2 from 1/2 to 2
// (create_aspect_ratio_groups(k)), so 2k + 2 groups; k = 0: one bin at 1.
//
// Thread safety: immutable after construction.
//
// Example:
//   auto groups = AspectRatioGroups(widths, heights, 3);
//   GroupedBatchSampler batches(std::make_shared<RandomSampler>(n, seed), groups, 8);
#ifndef FEEDLINE_GROUPED_BATCH_SAMPLER_H_
#define FEEDLINE_GROUPED_BATCH_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/export.h"
#include "feedline/sampler.h"

namespace feedline {

class FEEDLINE_EXPORT GroupedBatchSampler : public BatchSampler {
 public:
  // group_ids[i] is index i's group (any int64). Throws Error for a null
  // sampler, batch_size < 1, or an index of the sampler with no group.
  GroupedBatchSampler(std::shared_ptr<const Sampler> sampler, std::vector<int64_t> group_ids,
                      int64_t batch_size);
  int64_t size() const override;
  EpochPlan Plan(int64_t epoch) const override;

 private:
  std::shared_ptr<const Sampler> sampler_;
  std::vector<int64_t> group_ids_;
  int64_t batch_size_;
};

// The group of each image of `widths` x `heights`: the bin of its aspect
// ratio (width / height) among the 2k + 1 bins 2^linspace(-1, 1, 2k + 1)
// (for k = 0 the bin 1.0), as bisect_right places it (0 below the first
// bin, 2k + 1 from the last on). Throws Error if the spans differ in length,
// k < 0 or a height is not positive.
FEEDLINE_EXPORT std::vector<int64_t> AspectRatioGroups(std::span<const int64_t> widths,
                                                       std::span<const int64_t> heights, int k);

}  // namespace feedline

#endif  // FEEDLINE_GROUPED_BATCH_SAMPLER_H_
