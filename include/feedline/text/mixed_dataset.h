// MixedDataset: rows of several datasets blended by weight, deterministically
// (Megatron's BlendedDataset): position i takes the source whose share so far
// is furthest below its weight, that is the k maximizing
// weights[k] * (i + 1) - taken_k (ties to the lower k), so over every window
// of positions each source's count is within one or two of its weight times
// the window. Each source is read in its own order: its draws 0, 1, 2, ...
// are its rows in order, or with shuffle[k] a permutation of them from
// (seed, k, pass), a new one on each pass over the source.
//
// stopping (Hugging Face's interleave_datasets, Grain's mix):
//   kFirstExhausted  ends before the first draw past any source's last row.
//   kAllExhausted    ends once every source with a weight > 0 had every row
//                    drawn once; the others start another pass meanwhile.
//   kNever           num_samples rows, every source cycling in passes.
// num_samples >= 0 also caps the other two.
//
// A resume with other weights: DrawsBefore(p) says how many rows each source
// gave in positions [0, p); a MixedDataset built with those as `start` and
// the new weights continues every source where it stopped (no row lost or
// drawn twice within a pass), with the new weights over its own positions.
//
// The blend is computed at construction: 10 bytes per position.
//
// The loader's plan (Dataset::EpochOrder, EpochProgress) is passed on split
// by source: each source is told the rows it will be asked for, in order,
// and how many of them were delivered, so that a source that fetches ahead
// (a ParquetDataset's row groups, a remote pack's shards) does so through a
// mix as it does alone. Sources given more than once (the same object) get
// one order of all their positions. 2 bytes per position of the plan.
//
// Thread safety: the blend is immutable after construction, like every
// Dataset; the plan's split is guarded by its own mutex.
//
// Example:
//   MixOptions mix;
//   mix.weights = {0.5, 0.3, 0.2};
//   mix.shuffle = {true, true, true};
//   MixedDataset data({web, code, books}, mix);
#ifndef FEEDLINE_TEXT_MIXED_DATASET_H_
#define FEEDLINE_TEXT_MIXED_DATASET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"

namespace feedline::text {

enum class MixStopping { kFirstExhausted, kAllExhausted, kNever };

// "first_exhausted", "all_exhausted", "never"; Parse throws Error naming `text`.
FEEDLINE_EXPORT const char* MixStoppingName(MixStopping stopping);
FEEDLINE_EXPORT MixStopping ParseMixStopping(const std::string& text);

struct FEEDLINE_EXPORT MixOptions {
  std::vector<double> weights;  // one per source, >= 0, finite, not all 0
  MixStopping stopping = MixStopping::kFirstExhausted;
  int64_t num_samples = -1;     // kNever: required (>= 0); else a cap, -1 none
  std::vector<bool> shuffle;    // per source; empty: none
  uint64_t seed = 0;
  std::vector<int64_t> start;   // rows each source gave before (a resume); empty: none
  std::string source_field;     // not empty: each sample's int64 scalar, its source
};

class FEEDLINE_EXPORT MixedDataset : public Dataset {
 public:
  // Throws Error for a null or empty source with a weight > 0, weights or
  // shuffle or start of another length than sources, a bad weight, kNever
  // without num_samples, or a blend of more than 2^32 rows (give num_samples).
  MixedDataset(std::vector<std::shared_ptr<const Dataset>> sources, MixOptions options);

  int64_t size() const override { return static_cast<int64_t>(source_.size()); }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  int64_t Length(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;
  void EpochOrder(std::span<const int64_t> order) const override;
  void EpochProgress(int64_t delivered) const override;

  // The source position `index` reads and that source's row.
  int source_of(int64_t index) const;
  int64_t row_of(int64_t index) const;
  // Rows each source gave before position `position` (0 <= position <=
  // size()), `start` included: the `start` of a MixedDataset that resumes there.
  std::vector<int64_t> DrawsBefore(int64_t position) const;
  int num_sources() const { return static_cast<int>(sources_.size()); }

 private:
  std::vector<std::shared_ptr<const Dataset>> sources_;
  MixOptions options_;
  struct PlanSplit;

  std::vector<uint16_t> source_;  // by position
  std::vector<int64_t> draw_;     // by position: the source's draw number (start included)
  // Per source: the first source given the same object (whose order it shares).
  std::vector<uint16_t> plan_owner_;
  std::shared_ptr<PlanSplit> plan_;
};

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_MIXED_DATASET_H_
