// PackSchedule: the packed rows of every epoch, planned from the documents'
// lengths and the order a document sampler gives that epoch.
//
// Rows(epoch) runs PlanPacking over documents.Indices(epoch): with a random
// sampler every epoch packs other documents together; with the same (seed,
// epoch) the rows are the same, whoever asks and however many workers load
// them. A PackedDataset (which loads a row's pieces) and a PackBatchSampler
// (which batches the rows) share one schedule.
//
// Thread safety: Rows may be called from any thread. The last few epochs'
// plans are kept, so that the loader's workers, which ask for every row,
// find the plan its sampler already made; a plan is made without the lock.
//
// Example:
//   auto schedule = std::make_shared<PackSchedule>(
//       LengthsOf(*docs), std::make_shared<RandomSampler>(docs->size(), seed), options);
//   std::shared_ptr<const PackPlan> rows = schedule->Rows(/*epoch=*/0);
#ifndef FEEDLINE_TEXT_PACK_SCHEDULE_H_
#define FEEDLINE_TEXT_PACK_SCHEDULE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "feedline/export.h"
#include "feedline/sampler.h"
#include "feedline/text/pack_plan.h"

namespace feedline {
class Dataset;
}

namespace feedline::text {

// Every document's Length(i). Throws what Dataset::Length throws (Error for
// a dataset without lengths).
FEEDLINE_EXPORT std::vector<int64_t> LengthsOf(const Dataset& documents);

class FEEDLINE_EXPORT PackSchedule {
 public:
  // Throws Error for bad options or a null sampler, and for a length < 0.
  PackSchedule(std::vector<int64_t> lengths, std::shared_ptr<const Sampler> documents,
               PackOptions options);
  ~PackSchedule();
  PackSchedule(const PackSchedule&) = delete;
  PackSchedule& operator=(const PackSchedule&) = delete;

  // The rows of `epoch`. Throws what the sampler or PlanPacking throws (an
  // IndexError for a document index out of range).
  std::shared_ptr<const PackPlan> Rows(int64_t epoch) const;

  const PackOptions& options() const { return options_; }
  int64_t num_documents() const { return static_cast<int64_t>(lengths_.size()); }
  // The length document `document` was planned with. REQUIRES: 0 <= document <
  // num_documents().
  int64_t length(int64_t document) const { return lengths_[static_cast<size_t>(document)]; }
  // The epoch whose rows a PackBatchSampler over this schedule planned last
  // (the loader's epoch): the loader tells its PackedDataset the order of
  // that epoch's rows (Dataset::EpochOrder), without the epoch.
  void NotePlannedEpoch(int64_t epoch) const { planned_epoch_.store(epoch); }
  int64_t planned_epoch() const { return planned_epoch_.load(); }

  // At least as many rows as any epoch packs into, whatever its order: a
  // row holds at least one piece, and this counts the most pieces the
  // documents can be cut into.
  int64_t max_rows() const { return max_rows_; }

 private:
  struct Cache;

  std::vector<int64_t> lengths_;
  std::shared_ptr<const Sampler> documents_;
  PackOptions options_;
  int64_t max_rows_ = 0;
  std::unique_ptr<Cache> cache_;
  mutable std::atomic<int64_t> planned_epoch_{0};
};

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_PACK_SCHEDULE_H_
