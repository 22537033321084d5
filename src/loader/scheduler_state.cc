#include "src/loader/scheduler_state.h"

#include <utility>

#include "src/loader/claim_policy.h"

namespace feedline::internal {

SchedulerState::SchedulerState(const LoaderOptions& options,
                               std::shared_ptr<const BatchSampler> batch_sampler,
                               const Dataset* dataset, const LoadBackend* backend,
                               const SlotLayout* layout, int slot_limit, StatsCollector* stats)
    : options_(options),
      plan_listener_(batch_sampler != nullptr ? dataset : nullptr),
      backend_(backend),
      stats_(stats),
      planner_(batch_sampler, dataset),
      lock_(std::make_shared<SchedulerLock>()),
      pool_owner_(std::make_shared<SlotPool>(slot_limit, backend->slot_allocator(), lock_)),
      pool_(pool_owner_.get()),
      cursor_(batch_sampler),
      // With batches owned by workers, a released slot must reach its
      // owner: every waiting worker wakes and looks.
      roster_(options.num_workers,
              batch_sampler != nullptr && !claim_policy::BatchPerWorker(options, true),
              &lock_->wakeups),
      claims_(options, batch_sampler != nullptr, LoadsRowsTogether(*backend, options.timeout),
              backend->traits().shared_slots && batch_sampler != nullptr, pool_,
              &lock_->wakeups, &cursor_, &roster_,
              layout, &generation_) {
  if (batch_sampler != nullptr) lock_->wakeups.SetWorkerCount(roster_.num_workers());
}

bool SchedulerState::WorkersStoppingLocked() const {
  if (workers_ == nullptr) return false;
  workers_->mu().AssertHeld();  // mu(), by the pool's name
  return workers_->stopping_locked();
}

bool SchedulerState::WorkersShuttingDown() const {
  return workers_ != nullptr && workers_->shutting_down();
}

}  // namespace feedline::internal
