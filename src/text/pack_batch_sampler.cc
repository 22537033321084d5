#include "feedline/text/pack_batch_sampler.h"

#include <algorithm>
#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::text {

PackBatchSampler::PackBatchSampler(std::shared_ptr<const PackSchedule> schedule,
                                   int64_t batch_size, bool drop_last, int64_t num_replicas,
                                   int64_t rank)
    : schedule_(std::move(schedule)),
      batch_size_(batch_size),
      drop_last_(drop_last),
      num_replicas_(num_replicas),
      rank_(rank) {
  if (schedule_ == nullptr) throw Error("PackBatchSampler: the schedule must not be null");
  if (batch_size_ < 1) {
    throw Error("PackBatchSampler: batch_size must be >= 1, got " + std::to_string(batch_size_));
  }
  if (num_replicas_ < 1) {
    throw Error("PackBatchSampler: num_replicas must be >= 1, got " +
                std::to_string(num_replicas_));
  }
  if (rank_ < 0 || rank_ >= num_replicas_) {
    throw IndexError("PackBatchSampler: rank must be in [0, " + std::to_string(num_replicas_) +
                     "), got " + std::to_string(rank_));
  }
}

int64_t PackBatchSampler::Steps(int64_t remaining) const {
  const int64_t per_step = batch_size_ * num_replicas_;
  return drop_last_ ? remaining / per_step : (remaining + per_step - 1) / per_step;
}

int64_t PackBatchSampler::StartOf(int64_t epoch, int64_t rows) const {
  if (epoch != resume_epoch_.load(std::memory_order_acquire)) return 0;
  return std::min(rows, resume_rows_.load(std::memory_order_acquire));
}

int64_t PackBatchSampler::size() const { return Steps(schedule_->Rows(0)->num_rows()); }

EpochPlan PackBatchSampler::Plan(int64_t epoch) const {
  schedule_->NotePlannedEpoch(epoch);
  const int64_t rows = schedule_->Rows(epoch)->num_rows();
  const int64_t start = StartOf(epoch, rows);
  const int64_t remaining = rows - start;
  const int64_t steps = Steps(remaining);
  EpochPlan plan;
  plan.indices.reserve(static_cast<size_t>(steps * batch_size_));
  plan.offsets.reserve(static_cast<size_t>(steps) + 1);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t first = (s * num_replicas_ + rank_) * batch_size_;
    for (int64_t j = 0; j < batch_size_; ++j) {
      const int64_t at = first + j;
      if (at >= remaining) {
        // One rank alone ends on a short batch; several fill their last
        // step with the epoch's first rows, so that every rank takes it.
        if (num_replicas_ == 1) break;
        plan.indices.push_back(start + at % remaining);
      } else {
        plan.indices.push_back(start + at);
      }
    }
    plan.offsets.push_back(static_cast<int64_t>(plan.indices.size()));
  }
  return plan;
}

int64_t PackBatchSampler::GlobalPosition(int64_t epoch, int64_t batches) const {
  const int64_t rows = schedule_->Rows(epoch)->num_rows();
  const int64_t start = StartOf(epoch, rows);
  return std::min(rows, start + batches * batch_size_ * num_replicas_);
}

void PackBatchSampler::ResumeFrom(int64_t epoch, int64_t rows) {
  if (rows < 0) {
    throw Error("PackBatchSampler: the rows to resume after must be >= 0, got " +
                std::to_string(rows));
  }
  resume_rows_.store(rows, std::memory_order_release);
  resume_epoch_.store(epoch, std::memory_order_release);
}

}  // namespace feedline::text
