#include "src/loader/map_scheduling.h"

#include "src/loader/claim_policy.h"

namespace feedline::internal {
namespace {

// A consumer that would wait may load as a waiting worker (thread workers
// only: a LoadBackend of processes loads in its own workers). Not with a
// timeout (nobody would watch the consumer's own loads, and it cannot be
// replaced) nor workers the backend starts (a worker_init: what it set up
// may belong to the worker's thread); batches owned by workers
// (batch_per_worker) are loaded by their owner only.
bool ConsumerMayLendWorkers(const LoaderOptions& options, const LoadBackend& backend) {
  return options.num_workers > 0 && options.timeout.count() == 0 &&
         !backend.traits().starts_workers &&
         !claim_policy::BatchPerWorker(options, /*map_style=*/true);
}

}  // namespace

MapScheduling::MapScheduling(const LoaderOptions& options, const LoadBackend* backend,
                             Scheduler* scheduler, BatchFiller* filler, StatsCollector* stats)
    : options_(options),
      scheduler_(scheduler),
      consumer_(options, scheduler, filler, stats, ConsumerMayLendWorkers(options, *backend)),
      worker_(options, scheduler, filler) {}

void MapScheduling::Reset() {
  MutexLock lock(&scheduler_->mu());
  scheduler_->ResetLocked(/*stop_workers=*/!options_.persistent_workers);
}

void MapScheduling::SetActiveWorkers(int n) {
  MutexLock lock(&scheduler_->mu());
  scheduler_->SetActiveWorkersLocked(n);
}

int MapScheduling::active_workers() const {
  MutexLock lock(&scheduler_->mu());
  return scheduler_->active_workers_locked();
}

void MapScheduling::SetSlotLimit(int n) {
  MutexLock lock(&scheduler_->mu());
  scheduler_->SetSlotLimitLocked(n);
}

}  // namespace feedline::internal
