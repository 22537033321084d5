// EpochPlanner: an epoch's whole plan, drawn from the batch sampler before
// the epoch starts, without the scheduler's lock.
//
// Why not under the lock: a batch sampler may be Python code (a Python
// sampler or batch sampler behind the binding), and any Python code may run
// a garbage collection that drops the last handle of a batch of an earlier
// epoch; that batch's release (SlotPool::Release) takes the scheduler's
// lock, on the same thread. Planning under the lock deadlocked so (a batch
// held in a reference cycle, collected while Paddle's batch sampler
// iterated). Planning outside it also keeps the GIL from being taken under
// the lock, which a thread that holds the GIL and drops a batch waits for.
//
// Thread safety: immutable; Plan and pinned_epoch may run on any thread.
#ifndef FEEDLINE_SRC_LOADER_EPOCH_PLANNER_H_
#define FEEDLINE_SRC_LOADER_EPOCH_PLANNER_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"

namespace feedline::internal {

// An epoch and its plan, ready to start (EpochCursor::Start).
struct PlannedEpoch {
  int64_t epoch = 0;
  EpochPlan plan;
};

class EpochPlanner {
 public:
  // `dataset`, whose length an unplannable epoch's error names, must outlive
  // the planner.
  EpochPlanner(std::shared_ptr<const BatchSampler> batch_sampler, const Dataset* dataset);

  // `epoch`, or the batch sampler's pinned one (DistributedBatchSampler::
  // set_epoch), with its whole plan. Throws Error for a plan too large to
  // hold, naming the dataset's length, rather than std::length_error or
  // std::bad_alloc.
  PlannedEpoch Plan(int64_t epoch) const;
  // The epoch set through the batch sampler, if any.
  std::optional<int64_t> pinned_epoch() const {
    return batch_sampler_ != nullptr ? batch_sampler_->pinned_epoch() : std::nullopt;
  }

 private:
  const std::shared_ptr<const BatchSampler> batch_sampler_;
  const Dataset* const dataset_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_EPOCH_PLANNER_H_
