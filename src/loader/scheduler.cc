#include "src/loader/scheduler.h"

#include <algorithm>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/loader/batch_access.h"
#include "src/loader/claim_policy.h"

namespace feedline::internal {

Scheduler::Scheduler(const LoaderOptions& options,
                     std::shared_ptr<const BatchSampler> batch_sampler, const Dataset* dataset,
                     const LoadBackend* backend, const SlotLayout* layout, int slot_limit,
                     StatsCollector* stats)
    : options_(options),
      backend_(backend),
      stats_(stats),
      lock_(std::make_shared<SchedulerLock>()),
      pool_owner_(std::make_shared<SlotPool>(slot_limit, backend->slot_allocator(), lock_)),
      pool_(pool_owner_.get()),
      cursor_(batch_sampler, dataset),
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

// ---------------------------------------------------------------------------
// Epochs

void Scheduler::StartEpochLocked(int64_t epoch, int64_t first_batch) {
  cursor_.Start(epoch, first_batch);
  claims_.Start(first_batch);
  generation_.fetch_add(1);
  lock_->wakeups.WakeAll();
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();  // mu(), by the pool's name
  if (workers_->started_locked()) return;
  init_pending_.assign(static_cast<size_t>(options_.num_workers), options_.worker_init ? 1 : 0);
  workers_->StartLocked();
}

void Scheduler::BeginTakeLocked() {
  cursor_.set_resume_pending(false);
  consumer_.ThrowInterrupt();
  if (!cursor_.running()) StartEpochLocked(cursor_.next_epoch(), 0);
}

void Scheduler::ResetLocked(bool stop_workers) {
  cursor_.set_resume_pending(false);
  consumer_.ClearInterrupt();  // it belonged to the epoch abandoned here
  AbandonEpochLocked();
  if (stop_workers) StopWorkersLocked();
}

void Scheduler::GrowSlotsLocked() {
  pool_->GrowLocked();
  lock_->wakeups.WakeAll();
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
  cursor_.End();
  backend_->AbandonInFlight();
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();
  workers_->ShutdownLocked();
}

void Scheduler::JoinRetiredWorkers() {
  if (workers_ != nullptr) workers_->JoinRetired();
}

// ---------------------------------------------------------------------------
// Workers

void Scheduler::StopWorkersLocked() {
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();
  workers_->StopLocked();
}

void Scheduler::RestartWorkersLocked() {
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();
  workers_->StopLocked();  // the previous epoch's threads, if any
  workers_->StartLocked();
}

bool Scheduler::WorkersStoppingLocked() const {
  if (workers_ == nullptr) return false;
  workers_->mu().AssertHeld();
  return workers_->stopping_locked();
}

bool Scheduler::WorkersShuttingDown() const {
  return workers_ != nullptr && workers_->shutting_down();
}

void Scheduler::WorkerInitDoneLocked(int worker) {
  const size_t w = static_cast<size_t>(worker);
  if (w >= init_pending_.size() || init_pending_[w] == 0) return;
  init_pending_[w] = 0;
  consumer_.Notify();  // a consumer may wait for it to end the epoch
}

bool Scheduler::WorkerInitPendingLocked() const {
  return std::find(init_pending_.begin(), init_pending_.end(), 1) != init_pending_.end();
}

void Scheduler::FailLocked(std::exception_ptr error) { consumer_.Fail(std::move(error)); }

// ---------------------------------------------------------------------------
// Claims

bool Scheduler::NextTaskLocked(int worker, int64_t chunk, Task* task, bool* wake_another) {
  while (true) {
    // While the consumer borrows this worker's id (it loads rows while it
    // waits) the worker claims nothing. A worker the hold-back keeps waiting
    // looks again after a while (RowClaims::HoldBackCheck): the consumer may
    // keep the batch it holds.
    while (!(WorkersStoppingLocked() || (claims_.HasWork(worker) && !roster_.lent(worker)))) {
      roster_.SetWaiting(worker, true);
      lock_->wakeups.Wait(mu(), worker, claims_.HoldBackCheck());
      roster_.SetWaiting(worker, false);
    }
    if (WorkersStoppingLocked()) return false;
    if (claims_.Claim(chunk, task, worker)) {
      *wake_another = claims_.WorthWakingAnother(worker);
      return true;
    }
  }
}

// Without the lock: WorkerRoster::WakeAnother reads only what is safe
// without it (an atomic and the wake-ups), as RowClaims::NoteRowCost writes
// only atomics; the analysis cannot see that through the guarded member.
void Scheduler::WakeAnotherWorker() const { roster_.WakeAnother(); }

void Scheduler::NoteRowCost(double ns_per_row, int64_t batch_rows) {
  claims_.NoteRowCost(ns_per_row, batch_rows);
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
  {
    MutexLock lock(&mu());
    if (stale || slot->generation != generation_.load() || slot->orphaned.load()) {
      claims_.ReleaseOrphan(slot);
      pool_->PutLocked(slot);  // a free slot is new work
      pool_->ShrinkLocked();
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
