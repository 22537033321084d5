#include "src/loader/epoch_cursor.h"

#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

#include "feedline/error.h"
#include "src/loader/fingerprint.h"

namespace feedline::internal {

EpochCursor::EpochCursor(std::shared_ptr<const BatchSampler> batch_sampler,
                         const Dataset* dataset)
    : batch_sampler_(std::move(batch_sampler)), dataset_(dataset) {}

void EpochCursor::Start(int64_t epoch, int64_t first_batch) {
  const std::optional<int64_t> pinned = batch_sampler_->pinned_epoch();
  epoch_ = pinned ? *pinned : epoch;
  next_epoch_ = epoch_ + 1;
  plan_ = PlanEpoch(epoch_);
  plan_hash_.clear();
  if (first_batch > plan_.num_batches()) {
    throw Error("Restore: next_batch " + std::to_string(first_batch) + " is past the " +
                std::to_string(plan_.num_batches()) + " batches of epoch " +
                std::to_string(epoch_));
  }
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

EpochPlan EpochCursor::PlanEpoch(int64_t epoch) const {
  auto too_large = [&] {
    const int64_t samples = dataset_ != nullptr ? dataset_->size() : -1;
    return Error("DataLoader: the plan of epoch " + std::to_string(epoch) + " (every index of " +
                 std::to_string(samples) +
                 " samples, the dataset's length) does not fit in memory; check len(dataset)");
  };
  try {
    return batch_sampler_->Plan(epoch);
  } catch (const std::length_error&) {
    throw too_large();
  } catch (const std::bad_alloc&) {
    throw too_large();
  }
}

}  // namespace feedline::internal
