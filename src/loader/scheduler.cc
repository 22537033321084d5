#include "src/loader/scheduler.h"

#include <algorithm>
#include <span>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/loader/batch_access.h"

namespace feedline::internal {

Scheduler::Scheduler(const LoaderOptions& options,
                     std::shared_ptr<const BatchSampler> batch_sampler, const Dataset* dataset,
                     const LoadBackend* backend, const SlotLayout* layout,
                     std::shared_ptr<SlotPool> pool, StatsCollector* stats)
    : options_(options),
      dataset_(batch_sampler != nullptr ? dataset : nullptr),
      backend_(backend),
      pool_(std::move(pool)),
      stats_(stats),
      cursor_(batch_sampler, dataset),
      // With batches owned by workers, a released slot must reach its
      // owner: every waiting worker wakes and looks.
      roster_(options.num_workers,
              batch_sampler != nullptr && !RowClaims::BatchPerWorker(options, true),
              &pool_->wakeups()),
      claims_(options, batch_sampler != nullptr, LoadsRowsTogether(*backend, options.timeout),
              backend->traits().shared_slots && batch_sampler != nullptr, &cursor_, &roster_,
              layout, &generation_) {
  if (batch_sampler != nullptr) pool_->wakeups().SetWorkerCount(roster_.num_workers());
}

// ---------------------------------------------------------------------------
// Epochs

void Scheduler::StartEpochLocked(int64_t epoch, int64_t first_batch) {
  cursor_.Start(epoch, first_batch);
  claims_.Start(first_batch);
  generation_.fetch_add(1);
  if (dataset_ != nullptr) {
    const EpochPlan& plan = cursor_.plan();
    order_start_ = plan.offsets[static_cast<size_t>(first_batch)];
    dataset_->EpochOrder(
        std::span<const int64_t>(plan.indices).subspan(static_cast<size_t>(order_start_)));
  }
  pool().wakeups().WakeAll();
}

int64_t Scheduler::StartStreamEpochLocked() {
  const int64_t epoch = cursor_.StartStream();
  generation_.fetch_add(1);
  return epoch;
}

void Scheduler::AbandonEpochLocked() {
  if (!cursor_.running()) return;
  cursor_.End();
  if (dataset_ != nullptr) dataset_->EpochOrder({});
  // Rows nobody claimed will not be loaded: count them as finished, or their
  // slots would never come back.
  claims_.DropUnclaimed(pool());
  generation_.fetch_add(1);
  // Samples in flight belong to the abandoned epoch: a backend that can stop
  // them (worker processes) does, so that joining the workers does not wait
  // for a stuck one.
  backend_->AbandonInFlight();
  // Ready batches of the abandoned epoch go straight back; slots still being
  // filled are returned by the worker that finishes them.
  for (const auto& slot : pool().slots_locked()) {
    if (slot->state == SlotState::kReady) pool().PutLocked(slot.get());
  }
  pool().wakeups().WakeAll();
}

void Scheduler::ShutdownLocked() {
  generation_.fetch_add(1);
  if (dataset_ != nullptr && cursor_.running()) dataset_->EpochOrder({});
  cursor_.End();
  backend_->AbandonInFlight();
}

void Scheduler::RebindLocked(const LateLoad& late) {
  try {
    claims_.Rebind(pool(), late);
  } catch (...) {
    InterruptLocked(std::current_exception());  // without memory the batch cannot be loaded
  }
}

// ---------------------------------------------------------------------------
// Completion

bool Scheduler::IsStale(const Slot* slot) const {
  return slot->generation != generation_.load() || slot->orphaned.load() ||
         std::any_of(slot->status.begin(), slot->status.begin() + slot->planned_rows,
                     [](RowStatus s) { return s == RowStatus::kCancelled; });
}

void Scheduler::CountOutcomes(const Slot* slot) {
  if (slot->error_reasons.empty() && slot->failed_substitutes == 0) return;
  for (const std::string& reason : slot->error_reasons) stats_->AddError(reason);
  if (slot->failed_substitutes > 0) stats_->AddFailedSubstitutes(slot->failed_substitutes);
  for (int64_t r = 0; r < slot->planned_rows; ++r) {
    const RowStatus s = slot->status[static_cast<size_t>(r)];
    if (s == RowStatus::kSkipped) stats_->AddSkipped();
    if (s == RowStatus::kReplaced) stats_->AddReplaced();
  }
}

bool Scheduler::Complete(Slot* slot, bool stale) {
  bool ready = false;
  CondVar* wake_consumer = nullptr;
  bool wake_workers = false;
  {
    MutexLock lock(&mu());
    if (stale || slot->generation != generation_.load() || slot->orphaned.load()) {
      claims_.ReleaseOrphan(slot);
      pool().PutLocked(slot);  // a free slot is new work
      pool().ShrinkLocked();
      wake_workers = pool().wakeups().AnyWaiting(pool().mu());
    } else {
      CountOutcomes(slot);
      claims_.hold_back().NoteCompletion(*slot);
      slot->state = SlotState::kReady;
      if (consumer_.MarkReady()) wake_consumer = &consumer_.ready_cv();
      ready = true;
    }
  }
  // Both without the lock: a thread woken under it would only wait for it.
  if (wake_consumer != nullptr) wake_consumer->NotifyOne();
  if (wake_workers) pool().wakeups().WakeAll();
  return ready;
}

// ---------------------------------------------------------------------------
// Consumer's side

Slot* Scheduler::TakeReadyLocked() {
  const uint64_t generation = generation_.load();
  Slot* best = nullptr;
  for (const auto& slot : pool().slots_locked()) {
    Slot* s = slot.get();
    if (s->state != SlotState::kReady || s->generation != generation) continue;
    if (options_.in_order) {
      if (s->batch_index == cursor_.next_to_deliver()) {
        cursor_.AdvanceInOrder();
        best = s;
        break;
      }
    } else if (best == nullptr || s->batch_index < best->batch_index) {
      best = s;
    }
  }
  if (best != nullptr) {
    claims_.hold_back().NoteConsumerTook(pool(), static_cast<size_t>(best->planned_rows),
                                         roster_.active());
  }
  return best;
}

std::optional<Batch> Scheduler::DeliverLocked(Slot* slot) {
  cursor_.CountDelivered();
  if (dataset_ != nullptr) {
    const int64_t delivered = cursor_.plan().offsets[static_cast<size_t>(cursor_.delivered())];
    dataset_->EpochProgress(delivered - order_start_);
  }
  claims_.NoteDelivered(pool(), slot);
  if (slot->raise) {
    SampleError error = *slot->raise;
    pool().PutLocked(slot);
    pool().wakeups().WakeAll();
    if (error.kind() == FailureKind::kTimeout) throw TimeoutError(error);
    throw error;
  }
  if (slot->rows == 0) {  // every sample skipped
    pool().PutLocked(slot);
    pool().wakeups().WakeAll();
    return std::nullopt;
  }
  pool().MarkDeliveredLocked(slot);
  stats_->AddBatch();
  stats_->MarkFirstBatch();
  return BatchAccess::Make(pool_, slot);
}

bool Scheduler::WaitForProgressLocked(std::optional<Clock::time_point> deadline,
                                      std::optional<std::chrono::milliseconds> wake_after) {
  SlotHoldBack& hold_back = claims_.hold_back();
  hold_back.NoteConsumerWaits();
  // Released slots may have been left for later (batched wake-ups,
  // WorkerWakeups::set_batch_release_wakes): with the consumer about to
  // wait, the workers need them now.
  WorkerWakeups& wakeups = pool().wakeups();
  if (wakeups.AnyWaiting(pool().mu()) && pool().HasFreeLocked()) {
    // With batches owned by workers only the owner of the next one can use
    // the slot, and any may be it: all look.
    if (roster_.parked() || !roster_.interchangeable()) {
      wakeups.WakeAll();
    } else {
      wakeups.WakeOne();
    }
  }
  if (deadline && Clock::now() >= *deadline) {
    // TryNext returns kPending: the consumer may go on with other work
    // (SlotHoldBack), or be back at once (Python waits in slices).
    hold_back.NoteConsumerAway(Clock::now());
    return false;
  }
  consumer_.Wait(mu(), deadline, wake_after);
  return true;
}

// ---------------------------------------------------------------------------
// Interrupts

void Scheduler::Interrupt(std::exception_ptr error, uint64_t generation) {
  MutexLock lock(&mu());
  // Work of an abandoned epoch: nobody waits for it any more.
  if (generation != generation_.load()) return;
  InterruptLocked(std::move(error));
}

void Scheduler::InterruptLocked(std::exception_ptr error) {
  consumer_.SetInterrupt(std::move(error));
  AbandonEpochLocked();
  consumer_.Notify();
}

}  // namespace feedline::internal
