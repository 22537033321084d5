// PackBatchSampler: batches of packed rows, batch_size rows at a time in the
// order the schedule closed them, for a loader over a PackedDataset with the
// same schedule. The rows of an epoch come from schedule.Rows(epoch), so the
// number of batches may differ a little between epochs; size() is epoch 0's.
//
// Across num_replicas ranks (every rank with the same schedule and seed):
// step s of rank r is rows [(s * R + r) * B, ... + B) of the epoch (R ranks,
// B = batch_size), so after every rank took k steps the rows consumed over
// all ranks are the epoch's first k * R * B (GlobalPosition). Every rank
// takes the same number of steps: with more than one rank the last step is
// filled with the epoch's first rows again (or dropped with drop_last); one
// rank alone gets a short last batch instead. ResumeFrom(epoch, rows) starts
// that epoch after its first `rows` rows, consumed by a job of any size.
//
// Thread safety: immutable after construction except ResumeFrom, which may
// be called between epochs from any thread (atomics).
//
// Example:
//   LoaderOptions options;
//   options.batch_sampler = std::make_shared<PackBatchSampler>(schedule, 8, false);
//   DataLoader loader(std::make_shared<PackedDataset>(docs, schedule), options);
#ifndef FEEDLINE_TEXT_PACK_BATCH_SAMPLER_H_
#define FEEDLINE_TEXT_PACK_BATCH_SAMPLER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "feedline/batch_sampler.h"
#include "feedline/export.h"
#include "feedline/text/pack_schedule.h"

namespace feedline::text {

class FEEDLINE_EXPORT PackBatchSampler : public BatchSampler {
 public:
  // Throws Error if schedule is null or batch_size < 1, num_replicas < 1;
  // IndexError for a rank outside [0, num_replicas).
  PackBatchSampler(std::shared_ptr<const PackSchedule> schedule, int64_t batch_size,
                   bool drop_last, int64_t num_replicas = 1, int64_t rank = 0);

  int64_t size() const override;
  EpochPlan Plan(int64_t epoch) const override;

  // Rows of `epoch` consumed over all ranks once each took `batches` batches.
  int64_t GlobalPosition(int64_t epoch, int64_t batches) const;
  // Plan(epoch) continues after the epoch's first `rows` rows (later epochs
  // are whole). Throws Error if rows < 0.
  void ResumeFrom(int64_t epoch, int64_t rows);

 private:
  // The first row of `epoch` this job plans from (0 unless resumed), and
  // the epoch's rows.
  int64_t StartOf(int64_t epoch, int64_t rows) const;
  int64_t Steps(int64_t remaining) const;

  std::shared_ptr<const PackSchedule> schedule_;
  int64_t batch_size_;
  bool drop_last_;
  int64_t num_replicas_;
  int64_t rank_;
  std::atomic<int64_t> resume_epoch_{-1};
  std::atomic<int64_t> resume_rows_{0};
};

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_PACK_BATCH_SAMPLER_H_
