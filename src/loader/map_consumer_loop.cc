#include "src/loader/map_consumer_loop.h"

#include <exception>
#include <utility>

#include "src/core/sample_context_access.h"
#include "src/loader/claim_policy.h"
#include "src/loader/exception_kind.h"

namespace feedline::internal {
namespace {

// The consumer's time waiting for a batch, from the first look that found
// none ready to the batch (or the return), added to the statistics.
class ConsumerWait {
 public:
  explicit ConsumerWait(StatsCollector* stats) : stats_(stats) {}
  void Begin() {
    if (start_ns_ < 0) start_ns_ = NowNs();
  }
  void End() {
    if (start_ns_ >= 0) stats_->AddWait(NowNs() - start_ns_);
    start_ns_ = -1;
  }

 private:
  StatsCollector* const stats_;
  int64_t start_ns_ = -1;
};

}  // namespace

MapConsumerLoop::MapConsumerLoop(const LoaderOptions& options, Scheduler* scheduler,
                                 BatchFiller* filler, StatsCollector* stats, bool lend_workers)
    : options_(options),
      scheduler_(scheduler),
      filler_(filler),
      stats_(stats),
      lend_workers_(lend_workers),
      caller_ctx_(options.seed, 0, 0, -1) {
  if (!lend_workers_) return;
  for (int w = 0; w < options_.num_workers; ++w) {
    lent_contexts_.push_back(std::make_unique<SampleContext>(options_.seed, 0, 0, w));
  }
}

std::optional<Batch> MapConsumerLoop::Next(std::optional<Clock::time_point> deadline,
                                           bool* pending) {
  MutexLock lock(&scheduler_->mu());
  scheduler_->BeginTakeLocked();
  ConsumerWait wait(stats_);
  while (true) {
    scheduler_->ThrowPendingLocked();
    const bool all_delivered = scheduler_->AllDeliveredLocked();
    if (all_delivered) {
      // Every batch is out; a worker_init that still runs may fail, and is
      // waited for.
      if (!scheduler_->WorkerInitPendingLocked()) {
        scheduler_->FinishEpochLocked(/*stop_workers=*/!options_.persistent_workers);
        wait.End();
        return std::nullopt;
      }
    } else {
      if (Slot* slot = scheduler_->TakeReadyLocked()) {
        wait.End();
        std::optional<Batch> batch = scheduler_->DeliverLocked(slot);
        if (batch) return batch;
        continue;
      }
      scheduler_->GrowIfCallerHoldsEverySlotLocked();
    }
    wait.Begin();
    bool in_time = true;
    if (!all_delivered && !scheduler_->has_workers()) {
      in_time = LoadInCallerLocked(deadline);
    } else if (all_delivered || !LoadWhileWaitingLocked()) {
      in_time = scheduler_->WaitForBatchLocked(deadline);
    }
    if (!in_time) {
      wait.End();
      *pending = true;
      return std::nullopt;
    }
  }
}

bool MapConsumerLoop::LoadInCallerLocked(std::optional<Clock::time_point> deadline) {
  if (deadline && Clock::now() >= *deadline) return false;
  Task task;
  if (!scheduler_->ClaimLocked(claim_policy::CallerChunk(caller_ns_per_row_, deadline.has_value()),
                               &task)) {
    return true;
  }
  const int64_t rows = task.end - task.begin;
  int64_t elapsed = 0;
  {
    MutexUnlock unlock(&scheduler_->mu());
    elapsed = filler_->RunTask(task, caller_ctx_, &caller_lane_, 0);
  }
  caller_ns_per_row_ = claim_policy::UpdatedAverage(caller_ns_per_row_, elapsed, rows);
  return true;
}

bool MapConsumerLoop::LoadWhileWaitingLocked() {
  if (!lend_workers_) return false;
  // Only rows that load in about a microsecond: the consumer then returns to
  // its batch within one chunk (~20 us), and loading them costs less than
  // the sleep, wake-up and context switches it saves. Slow rows (an image)
  // are left to the workers, whatever the wait.
  const double ns_per_row = scheduler_->row_ns_locked();
  if (!claim_policy::ConsumerLoadsWhileWaiting(ns_per_row)) return false;
  const int worker = scheduler_->LendWaitingWorkerLocked();
  if (worker < 0) return false;
  Task task;
  try {
    if (!scheduler_->ClaimLocked(claim_policy::WorkerChunk(ns_per_row), &task)) {
      scheduler_->ReturnWorkerLocked(worker);
      return false;
    }
  } catch (...) {
    // std::bad_alloc sizing a slot: the epoch ends, as when a worker meets it.
    scheduler_->ReturnWorkerLocked(worker);
    scheduler_->InterruptLocked(std::current_exception());
    return true;
  }
  SampleContext& ctx = *lent_contexts_[static_cast<size_t>(worker)];
  try {
    MutexUnlock unlock(&scheduler_->mu());
    filler_->RunTask(task, ctx, &caller_lane_, worker);
  } catch (...) {
    // The id goes back whatever ended the task (it must not stay lent), a
    // thread cancellation too; what would end a worker's task
    // (std::bad_alloc) ends the epoch, as there.
    scheduler_->ReturnWorkerLocked(worker);
    RethrowIfCancellation();
    scheduler_->InterruptLocked(std::current_exception());
    return true;
  }
  scheduler_->ReturnWorkerLocked(worker);
  return true;
}

}  // namespace feedline::internal
