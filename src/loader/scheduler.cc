#include "src/loader/scheduler.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "src/loader/batch_access.h"

namespace feedline::internal {

// ---------------------------------------------------------------------------
// Epochs

void Scheduler::StartEpochLocked(PlannedEpoch planned, int64_t first_batch) {
  cursor_.Start(std::move(planned), first_batch);
  claims_.Start(first_batch);
  generation_.fetch_add(1);
  if (plan_listener_ != nullptr) {
    const EpochPlan& plan = cursor_.plan();
    order_start_ = plan.offsets[static_cast<size_t>(first_batch)];
    plan_listener_->EpochOrder(
        std::span<const int64_t>(plan.indices).subspan(static_cast<size_t>(order_start_)));
  }
  lock_->wakeups.WakeAll();
  StartWorkersLocked();
}

void Scheduler::BeginTakeLocked() {
  cursor_.set_resume_pending(false);
  consumer_.ThrowInterrupt();
  while (!cursor_.running()) {
    const int64_t epoch = cursor_.next_epoch();
    const uint64_t generation = generation_.load();
    std::optional<PlannedEpoch> planned;
    {
      MutexUnlock unlocked(&mu());
      planned = PlanEpoch(epoch);
    }
    // Another thread may have started, restored or abandoned an epoch
    // meanwhile (a Restore, a Reset): then the plan may be another's.
    if (!cursor_.running() && generation_.load() == generation && cursor_.next_epoch() == epoch) {
      StartEpochLocked(std::move(*planned), 0);
    }
  }
}

void Scheduler::ResetLocked(bool stop_workers) {
  cursor_.set_resume_pending(false);
  consumer_.ClearInterrupt();  // it belonged to the epoch abandoned here
  AbandonEpochLocked();
  if (stop_workers) StopWorkersLocked();
}

void Scheduler::FinishEpochLocked(bool stop_workers) {
  cursor_.End();
  if (stop_workers) StopWorkersLocked();
}

int64_t Scheduler::StartStreamEpochLocked() {
  const int64_t epoch = cursor_.StartStream();
  generation_.fetch_add(1);
  return epoch;
}

void Scheduler::AbandonEpochLocked() {
  if (!cursor_.running()) return;
  cursor_.End();
  if (plan_listener_ != nullptr) plan_listener_->EpochOrder({});
  // Rows nobody claimed will not be loaded: count them as finished, or their
  // slots would never come back.
  claims_.DropUnclaimed();
  generation_.fetch_add(1);
  // Samples in flight belong to the abandoned epoch: a backend that can stop
  // them (worker processes) does, so that joining the workers does not wait
  // for a stuck one.
  backend_->AbandonInFlight();
  // Ready batches of the abandoned epoch go straight back; slots still being
  // filled are returned by the worker that finishes them.
  for (const auto& slot : pool_->slots_locked()) {
    if (slot->state == SlotState::kReady) pool_->PutLocked(slot.get());
  }
  lock_->wakeups.WakeAll();
}

void Scheduler::ShutdownLocked() {
  generation_.fetch_add(1);
  if (plan_listener_ != nullptr && cursor_.running()) plan_listener_->EpochOrder({});
  cursor_.End();
  backend_->AbandonInFlight();
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();
  workers_->ShutdownLocked();
}

void Scheduler::RebindLocked(const LateLoad& late) {
  try {
    claims_.Rebind(late);
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
  std::vector<std::shared_ptr<const void>> detached;  // destroyed without the lock
  {
    MutexLock lock(&mu());
    if (stale || slot->generation != generation_.load() || slot->orphaned.load()) {
      claims_.ReleaseOrphan(slot);
      pool_->PutLocked(slot);  // a free slot is new work
      pool_->ShrinkLocked();
      detached = pool_->TakeDetachedLocked();
      wake_workers = lock_->wakeups.AnyWaiting();
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
  if (wake_workers) lock_->wakeups.WakeAll();
  return ready;
}

// ---------------------------------------------------------------------------
// Consumer's side

Slot* Scheduler::TakeReadyLocked() {
  const uint64_t generation = generation_.load();
  Slot* best = nullptr;
  for (const auto& slot : pool_->slots_locked()) {
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
    claims_.hold_back().NoteConsumerTook(static_cast<size_t>(best->planned_rows),
                                         roster_.active());
  }
  return best;
}

std::optional<Batch> Scheduler::DeliverLocked(Slot* slot) {
  cursor_.CountDelivered();
  if (plan_listener_ != nullptr) {
    const int64_t delivered = cursor_.plan().offsets[static_cast<size_t>(cursor_.delivered())];
    plan_listener_->EpochProgress(delivered - order_start_);
  }
  claims_.NoteDelivered(slot);
  if (slot->raise) {
    SampleError error = *slot->raise;
    pool_->PutLocked(slot);
    lock_->wakeups.WakeAll();
    if (error.kind() == FailureKind::kTimeout) throw TimeoutError(error);
    throw error;
  }
  if (slot->rows == 0) {  // every sample skipped
    pool_->PutLocked(slot);
    lock_->wakeups.WakeAll();
    return std::nullopt;
  }
  pool_->MarkDeliveredLocked(slot);
  stats_->AddBatch();
  stats_->MarkFirstBatch();
  return BatchAccess::Make(pool_owner_, slot);
}

bool Scheduler::WaitForProgressLocked(std::optional<Clock::time_point> deadline,
                                      std::optional<std::chrono::milliseconds> wake_after) {
  SlotHoldBack& hold_back = claims_.hold_back();
  hold_back.NoteConsumerWaits();
  // Released slots may have been left for later (batched wake-ups,
  // WorkerWakeups::set_batch_release_wakes): with the consumer about to
  // wait, the workers need them now.
  WorkerWakeups& wakeups = lock_->wakeups;
  if (wakeups.AnyWaiting() && pool_->HasFreeLocked()) {
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

bool Scheduler::WaitForBatchLocked(std::optional<Clock::time_point> deadline) {
  if (options_.timeout.count() == 0) return WaitForProgressLocked(deadline, std::nullopt);
  // Wake up regularly to look for a sample past the timeout.
  const bool waited = WaitForProgressLocked(
      deadline,
      std::min<std::chrono::milliseconds>(options_.timeout, std::chrono::milliseconds(50)));
  if (waited) AbandonLateLoadsLocked();
  return waited;
}

void Scheduler::AbandonLateLoadsLocked() {
  if (workers_ == nullptr) return;
  const int64_t limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.timeout).count();
  workers_->mu().AssertHeld();
  workers_->AbandonLateLoadsLocked(NowNs(), limit, generation(), [this](const LateLoad& late) {
    mu().AssertHeld();  // called under it
    RebindLocked(late);
  });
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
