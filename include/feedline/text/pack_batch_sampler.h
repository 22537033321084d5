// PackBatchSampler: batches of packed rows, batch_size rows at a time in the
// order the schedule closed them, for a loader over a PackedDataset with the
// same schedule. The rows of an epoch come from schedule.Rows(epoch), so the
// number of batches may differ a little between epochs; size() is epoch 0's.
//
// Thread safety: immutable after construction.
//
// Example:
//   LoaderOptions options;
//   options.batch_sampler = std::make_shared<PackBatchSampler>(schedule, 8, false);
//   DataLoader loader(std::make_shared<PackedDataset>(docs, schedule), options);
#ifndef FEEDLINE_TEXT_PACK_BATCH_SAMPLER_H_
#define FEEDLINE_TEXT_PACK_BATCH_SAMPLER_H_

#include <cstdint>
#include <memory>

#include "feedline/batch_sampler.h"
#include "feedline/export.h"
#include "feedline/text/pack_schedule.h"

namespace feedline::text {

class FEEDLINE_EXPORT PackBatchSampler : public BatchSampler {
 public:
  // Throws Error if schedule is null or batch_size < 1.
  PackBatchSampler(std::shared_ptr<const PackSchedule> schedule, int64_t batch_size,
                   bool drop_last);

  int64_t size() const override;
  EpochPlan Plan(int64_t epoch) const override;

 private:
  std::shared_ptr<const PackSchedule> schedule_;
  int64_t batch_size_;
  bool drop_last_;
};

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_PACK_BATCH_SAMPLER_H_
