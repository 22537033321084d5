// EpochCursor: which epoch the loader runs and how far its delivery got.
//   - the epoch: its number, whether it runs, the one the next iteration
//     runs (the batch sampler's pinned epoch, DistributedBatchSampler::
//     set_epoch, else the loader's counter);
//   - its plan (drawn beforehand by the EpochPlanner, epoch_planner.h) and
//     the plan's hash, for checkpoints (LoaderState);
//   - delivery: the batches handed out (or skipped), and, in order, the one
//     to hand out next;
//   - a restored epoch not yet consumed (resume_pending), which the next
//     iteration continues instead of starting afresh.
// What is bound to slots and claimed by workers is the Scheduler's; the
// cursor only says where the epoch stands.
//
// Thread safety: none of its own; the Scheduler guards it with its mutex.
#ifndef FEEDLINE_SRC_LOADER_EPOCH_CURSOR_H_
#define FEEDLINE_SRC_LOADER_EPOCH_CURSOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "feedline/batch_sampler.h"
#include "src/loader/epoch_planner.h"

namespace feedline::internal {

class EpochCursor {
 public:
  // `batch_sampler` is null for an IterableDataset (no plan); the cursor
  // asks it only for a pinned epoch (next_epoch).
  explicit EpochCursor(std::shared_ptr<const BatchSampler> batch_sampler);

  // Map-style: runs the planned epoch, delivering from batch `first_batch`.
  // Throws Error for a first_batch past the end.
  void Start(PlannedEpoch planned, int64_t first_batch);
  // IterableDataset: the next epoch runs (no plan); returns its number.
  int64_t StartStream();
  // The running epoch ended: delivered to its end, abandoned, or shut down.
  void End() { running_ = false; }

  bool running() const { return running_; }
  int64_t epoch() const { return epoch_; }  // the running (or last) epoch
  // The epoch the next iteration runs: the batch sampler's pinned one, else
  // the loader's counter, which continues after the epoch last run, pinned
  // or not. Asks the batch sampler (a C++ one: Python samplers pin none).
  int64_t next_epoch() const;
  void set_next_epoch(int64_t epoch) { next_epoch_ = epoch; }
  bool resume_pending() const { return resume_pending_; }
  void set_resume_pending(bool pending) { resume_pending_ = pending; }

  const EpochPlan& plan() const { return plan_; }
  // PlanHash of the running plan, computed once when first needed.
  const std::string& plan_hash() const;

  // Batches handed out (or skipped) this epoch.
  int64_t delivered() const { return delivered_; }
  bool all_delivered() const { return delivered_ >= plan_.num_batches(); }
  void CountDelivered() { ++delivered_; }
  // In order: the batch to hand out next, and its turn passing.
  int64_t next_to_deliver() const { return next_deliver_; }
  void AdvanceInOrder() { ++next_deliver_; }

 private:
  const std::shared_ptr<const BatchSampler> batch_sampler_;
  bool running_ = false;
  bool resume_pending_ = false;
  int64_t epoch_ = 0;
  int64_t next_epoch_ = 0;
  EpochPlan plan_;
  mutable std::string plan_hash_;  // of plan_, when first needed
  int64_t next_deliver_ = 0;
  int64_t delivered_ = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_EPOCH_CURSOR_H_
