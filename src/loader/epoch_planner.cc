#include "src/loader/epoch_planner.h"

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::internal {

EpochPlanner::EpochPlanner(std::shared_ptr<const BatchSampler> batch_sampler,
                           const Dataset* dataset)
    : batch_sampler_(std::move(batch_sampler)), dataset_(dataset) {}

PlannedEpoch EpochPlanner::Plan(int64_t epoch) const {
  PlannedEpoch planned;
  planned.epoch = pinned_epoch().value_or(epoch);
  auto too_large = [&] {
    const int64_t samples = dataset_ != nullptr ? dataset_->size() : -1;
    return Error("DataLoader: the plan of epoch " + std::to_string(planned.epoch) +
                 " (every index of " + std::to_string(samples) +
                 " samples, the dataset's length) does not fit in memory; check len(dataset)");
  };
  try {
    planned.plan = batch_sampler_->Plan(planned.epoch);
  } catch (const std::length_error&) {
    throw too_large();
  } catch (const std::bad_alloc&) {
    throw too_large();
  }
  return planned;
}

}  // namespace feedline::internal
