#include "src/loader/epoch_cursor.h"

#include <optional>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/loader/fingerprint.h"

namespace feedline::internal {

EpochCursor::EpochCursor(std::shared_ptr<const BatchSampler> batch_sampler)
    : batch_sampler_(std::move(batch_sampler)) {}

void EpochCursor::Start(PlannedEpoch planned, int64_t first_batch) {
  if (first_batch > planned.plan.num_batches()) {
    throw Error("Restore: next_batch " + std::to_string(first_batch) + " is past the " +
                std::to_string(planned.plan.num_batches()) + " batches of epoch " +
                std::to_string(planned.epoch));
  }
  epoch_ = planned.epoch;
  next_epoch_ = epoch_ + 1;
  plan_ = std::move(planned.plan);
  plan_hash_.clear();
  next_deliver_ = first_batch;
  delivered_ = first_batch;
  running_ = true;
}

int64_t EpochCursor::StartStream() {
  epoch_ = next_epoch_++;
  running_ = true;
  delivered_ = 0;
  return epoch_;
}

int64_t EpochCursor::next_epoch() const {
  const std::optional<int64_t> pinned =
      batch_sampler_ != nullptr ? batch_sampler_->pinned_epoch() : std::nullopt;
  return pinned ? *pinned : next_epoch_;
}

const std::string& EpochCursor::plan_hash() const {
  if (plan_hash_.empty()) plan_hash_ = PlanHash(plan_);
  return plan_hash_;
}

}  // namespace feedline::internal
