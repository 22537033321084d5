#include "feedline/text/pack_batch_sampler.h"

#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::text {

PackBatchSampler::PackBatchSampler(std::shared_ptr<const PackSchedule> schedule,
                                   int64_t batch_size, bool drop_last)
    : schedule_(std::move(schedule)), batch_size_(batch_size), drop_last_(drop_last) {
  if (schedule_ == nullptr) throw Error("PackBatchSampler: the schedule must not be null");
  if (batch_size_ < 1) {
    throw Error("PackBatchSampler: batch_size must be >= 1, got " + std::to_string(batch_size_));
  }
}

int64_t PackBatchSampler::size() const {
  const int64_t rows = schedule_->Rows(0)->num_rows();
  return drop_last_ ? rows / batch_size_ : (rows + batch_size_ - 1) / batch_size_;
}

EpochPlan PackBatchSampler::Plan(int64_t epoch) const {
  const int64_t rows = schedule_->Rows(epoch)->num_rows();
  const int64_t end = drop_last_ ? rows - rows % batch_size_ : rows;
  EpochPlan plan;
  plan.indices.reserve(static_cast<size_t>(end));
  plan.offsets.reserve(static_cast<size_t>((end + batch_size_ - 1) / batch_size_) + 1);
  for (int64_t r = 0; r < end; ++r) {
    plan.indices.push_back(r);
    if ((r + 1) % batch_size_ == 0 || r + 1 == end) plan.offsets.push_back(r + 1);
  }
  return plan;
}

}  // namespace feedline::text
