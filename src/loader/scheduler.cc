#include "src/loader/scheduler.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>

#include "feedline/error.h"
#include "src/loader/batch_access.h"

namespace feedline::internal {
namespace {

// Times the consumer yields, watching for a ready batch, before it sleeps.
constexpr int kConsumerPolls = 64;
// A batch that loads in less than this is cheaper to load than the wake-up
// and context switch of a worker per batch: released slots are then handed
// to the workers a few at a time (SlotPool::set_batch_release_wakes).
constexpr double kCheapBatchNs = 50000.0;
// Claims of rows that each cost a round trip (round_trip_claims_): about
// this much loading per claim, so that a round trip of ~20 us is under a
// tenth of it, and no more rows than kMaxRoundTripRows, so that the last
// claims of a batch stay short.
constexpr double kRoundTripClaimNs = 250000.0;
constexpr int64_t kMaxRoundTripRows = 8;

int64_t RoundTripChunk(double ns_per_row) {
  if (ns_per_row <= 0) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(kRoundTripClaimNs / ns_per_row), 1,
                             kMaxRoundTripRows);
}

}  // namespace

Scheduler::Scheduler(const LoaderOptions& options,
                     std::shared_ptr<const BatchSampler> batch_sampler, const Dataset* dataset,
                     const LoadBackend* backend, const SlotLayout* layout,
                     std::shared_ptr<SlotPool> pool, StatsCollector* stats)
    : options_(options),
      batch_sampler_(std::move(batch_sampler)),
      dataset_(dataset),
      backend_(backend),
      cursor_(batch_sampler_, dataset),
      layout_(layout),
      pool_(std::move(pool)),
      stats_(stats),
      num_workers_(std::max(1, options.num_workers)),
      active_workers_(num_workers_),
      waiting_(static_cast<size_t>(num_workers_), 0),
      lent_(static_cast<size_t>(num_workers_), 0),
      round_trip_claims_(LoadsRowsTogether(*backend, options.timeout)),
      hold_back_(backend->traits().shared_slots && batch_sampler_ != nullptr) {
  batch_per_worker_ = options.batch_per_worker && options.num_workers > 0 && batch_sampler_;
  if (batch_per_worker_) {
    own_next_.assign(static_cast<size_t>(num_workers_), 0);
    own_open_.assign(static_cast<size_t>(num_workers_), nullptr);
    own_undelivered_.assign(static_cast<size_t>(num_workers_), 0);
  }
  // With batches owned by workers, a released slot must reach its owner:
  // every waiting worker wakes and looks.
  pool_->set_wake_one_on_release(batch_sampler_ != nullptr && !batch_per_worker_);
  if (batch_sampler_ != nullptr) pool_->SetWorkerCount(num_workers_);
}

// ---------------------------------------------------------------------------
// Epochs

void Scheduler::StartEpochLocked(int64_t epoch, int64_t first_batch) {
  cursor_.Start(epoch, first_batch);
  next_bind_ = first_batch;
  if (batch_per_worker_) {
    // Round-robin from worker 0 at the first batch of this iteration (the
    // vectors are sized once, in the constructor: nothing here allocates).
    for (int w = 0; w < num_workers_; ++w) own_next_[static_cast<size_t>(w)] = first_batch + w;
    std::fill(own_open_.begin(), own_open_.end(), nullptr);
    std::fill(own_undelivered_.begin(), own_undelivered_.end(), 0);
  }
  open_ = nullptr;
  hold_back_.NoteEpochStart();
  generation_.fetch_add(1);
  pool_->WakeWorkers();
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
  if (open_ != nullptr) DropUnclaimedLocked(open_);
  open_ = nullptr;
  for (Slot*& slot : own_open_) {
    if (slot != nullptr && slot->claimed < slot->planned_rows) DropUnclaimedLocked(slot);
    slot = nullptr;
  }
  for (Slot* slot : retry_) DropUnclaimedLocked(slot);
  retry_.clear();
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
  pool_->WakeWorkers();
}

void Scheduler::ShutdownLocked() {
  generation_.fetch_add(1);
  cursor_.End();
  backend_->AbandonInFlight();
}

void Scheduler::DropUnclaimedLocked(Slot* slot) {
  const int64_t n = slot->planned_rows - slot->claimed;
  if (n <= 0) return;
  slot->claimed = slot->planned_rows;
  if (slot->finished.fetch_add(n, std::memory_order_acq_rel) + n == slot->planned_rows) {
    // Nothing was loading: nobody else will finish it.
    if (slot->orphaned.exchange(false)) --orphaned_slots_;
    pool_->PutLocked(slot);
  }
}

// ---------------------------------------------------------------------------
// Workers' side

bool Scheduler::HasWorkLocked(int worker) const {
  if (!cursor_.running() || worker >= active_workers_) return false;
  for (const Slot* slot : retry_) {
    if (slot->claimed < slot->planned_rows) return true;
  }
  if (batch_per_worker_ && worker >= 0) return HasOwnWorkLocked(worker);
  if (open_ != nullptr && open_->claimed < open_->planned_rows) return true;
  return next_bind_ < cursor_.plan().num_batches() && pool_->HasFreeLocked() &&
         !HoldsBackNewSlotLocked();
}

bool Scheduler::HoldsBackNewSlotLocked() const {
  if (!hold_back_.on()) return false;
  const EpochPlan& plan = cursor_.plan();
  if (!cursor_.running() || next_bind_ >= plan.num_batches() || !retry_.empty()) return false;
  return hold_back_.HoldsBack(*pool_, plan.batch(next_bind_).size(), active_workers_,
                             generation_.load());
}

std::optional<Scheduler::Clock::time_point> Scheduler::HoldBackCheckLocked() const {
  if (!HoldsBackNewSlotLocked()) return std::nullopt;
  return SlotHoldBack::RecheckAt(Clock::now());
}

bool Scheduler::WorthWakingAnotherLocked(int worker) const {
  if (batch_per_worker_) return false;  // each worker has its own batches: none is another's
  if (!HasWorkLocked(worker)) return false;
  if (!pool_->batch_release_wakes() || !retry_.empty()) return true;
  if (open_ != nullptr && open_->claimed < open_->planned_rows) return true;
  return pool_->FreeCountLocked() >= 2 && cursor_.plan().num_batches() - next_bind_ >= 2;
}

void Scheduler::WakeAnotherWorker() const {
  if (workers_parked()) {
    pool_->WakeWorkers();
  } else {
    pool_->WakeOneWorker();
  }
}

void Scheduler::NoteRowCost(double ns_per_row, int64_t rows) {
  if (batch_sampler_ == nullptr) return;  // a stream's worker waits for its own turn
  row_ns_.store(ns_per_row, std::memory_order_relaxed);
  const bool cheap = ns_per_row * static_cast<double>(rows) < kCheapBatchNs;
  if (cheap != pool_->batch_release_wakes()) pool_->set_batch_release_wakes(cheap);
}

void Scheduler::SetWorkerWaitingLocked(int worker, bool waiting) {
  const size_t w = static_cast<size_t>(worker);
  waiting_[w] = waiting ? 1 : 0;
  // Woken while its id is lent, the worker goes back to waiting: the wake
  // may have been meant for work it cannot take now.
  if (!waiting && lent_[w] != 0) woken_while_lent_ = true;
}

int Scheduler::LendWaitingWorkerLocked() {
  for (int w = 0; w < active_workers_; ++w) {
    const size_t i = static_cast<size_t>(w);
    if (waiting_[i] != 0 && lent_[i] == 0 && HasWorkLocked(w)) {
      lent_[i] = 1;
      return w;
    }
  }
  return -1;
}

void Scheduler::ReturnWorkerLocked(int worker) {
  lent_[static_cast<size_t>(worker)] = 0;
  // Only a wake the worker slept through while lent is made good: waking a
  // worker after every chunk the consumer loaded would cost the context
  // switches lending saves.
  if (!woken_while_lent_) return;
  woken_while_lent_ = false;
  if (!pool_->workers_waiting_locked() || !HasWorkLocked(worker)) return;
  if (workers_parked()) {
    pool_->WakeWorkers();
  } else {
    pool_->WakeOneWorker();
  }
}

void Scheduler::BindLocked(Slot* slot, int64_t batch_index) {
  std::span<const int64_t> rows = cursor_.plan().batch(batch_index);
  layout_->EnsureRows(slot, static_cast<int64_t>(rows.size()));
  slot->epoch = cursor_.epoch();
  slot->batch_index = batch_index;
  slot->generation = generation_.load();
  slot->state = SlotState::kFilling;
  slot->planned_rows = static_cast<int64_t>(rows.size());
  slot->claimed = 0;
  slot->finished.store(0, std::memory_order_relaxed);
  slot->raise.reset();
  slot->errors.clear();
  slot->error_reasons.clear();
  slot->failed_substitutes = 0;
  slot->orphaned.store(false);
  std::copy(rows.begin(), rows.end(), slot->indices.begin());
  std::fill_n(slot->status.begin(), rows.size(), RowStatus::kPending);
  std::fill_n(slot->timed_out.begin(), rows.size(), 0);
}

bool Scheduler::HasOwnWorkLocked(int worker) const {
  const size_t w = static_cast<size_t>(worker);
  if (w >= own_next_.size()) return false;
  const Slot* open = own_open_[w];
  if (open != nullptr && open->claimed < open->planned_rows) return true;
  return own_next_[w] < cursor_.plan().num_batches() &&
         own_undelivered_[w] < options_.prefetch_factor &&
         pool_->HasFreeLocked();
}

Slot* Scheduler::OwnBatchLocked(int worker) {
  const size_t w = static_cast<size_t>(worker);
  if (w >= own_next_.size()) return nullptr;
  Slot* open = own_open_[w];
  if (open != nullptr && open->claimed < open->planned_rows) return open;
  own_open_[w] = nullptr;
  if (own_next_[w] >= cursor_.plan().num_batches() ||
      own_undelivered_[w] >= options_.prefetch_factor) {
    return nullptr;
  }
  Slot* fresh = pool_->TakeFreeLocked();
  if (fresh == nullptr) return nullptr;
  try {
    BindLocked(fresh, own_next_[w]);
  } catch (...) {
    pool_->PutLocked(fresh);  // std::bad_alloc sizing it: the slot stays usable
    throw;
  }
  fresh->producer = worker;  // its delivery gives the worker its quota back
  own_next_[w] += num_workers_;
  ++own_undelivered_[w];
  own_open_[w] = fresh;
  return fresh;
}

bool Scheduler::ClaimLocked(int64_t chunk, Task* task, int worker) {
  // Batches bound again after a timeout go first: the consumer waits for them.
  while (!retry_.empty() && retry_.front()->claimed >= retry_.front()->planned_rows) {
    retry_.erase(retry_.begin());
  }
  Slot* slot = nullptr;
  if (!retry_.empty()) {
    slot = retry_.front();
  } else if (batch_per_worker_ && worker >= 0) {
    slot = OwnBatchLocked(worker);
    if (slot == nullptr) return false;
    chunk = slot->planned_rows - slot->claimed;  // the whole batch, in one claim
  } else {
    if (open_ == nullptr || open_->claimed >= open_->planned_rows) {
      open_ = nullptr;
      if (next_bind_ >= cursor_.plan().num_batches() || HoldsBackNewSlotLocked()) return false;
      Slot* fresh = pool_->TakeFreeLocked();
      if (fresh == nullptr) return false;
      try {
        BindLocked(fresh, next_bind_);
      } catch (...) {
        pool_->PutLocked(fresh);  // std::bad_alloc sizing it: the slot stays usable
        throw;
      }
      ++next_bind_;
      open_ = fresh;
    }
    slot = open_;
  }
  if (round_trip_claims_) {
    chunk = std::max(chunk, RoundTripChunk(row_ns()));
  }
  const int64_t unclaimed = slot->planned_rows - slot->claimed;
  // No share is left for other workers: a chunk is sized to take ~20 us, so
  // the tail of a batch is at most that unbalanced, and cheap samples get a
  // whole batch per worker (no cross-core completion per batch).
  const int64_t n = std::min(chunk, unclaimed);
  hold_back_.NoteClaim(chunk);
  task->slot = slot;
  task->begin = slot->claimed;
  task->end = slot->claimed + n;
  task->generation = slot->generation;
  slot->claimed += n;
  // Fully claimed (an empty batch, which a custom batch sampler may yield,
  // at once): the next claim takes another batch.
  if (slot->claimed >= slot->planned_rows) {
    slot->fully_claimed = Clock::now();
    if (slot == open_) {
      open_ = nullptr;
    } else if (!retry_.empty() && slot == retry_.front()) {
      retry_.erase(retry_.begin());
    } else if (batch_per_worker_ && worker >= 0) {
      own_open_[static_cast<size_t>(worker)] = nullptr;
    }
  }
  return true;
}

void Scheduler::RebindLocked(const LateLoad& late) {
  Slot* old_slot = late.slot;
  ++orphaned_slots_;
  // Rows of the old slot nobody claimed yet are loaded in the new one.
  if (open_ == old_slot) open_ = nullptr;
  retry_.erase(std::remove(retry_.begin(), retry_.end(), old_slot), retry_.end());
  DropUnclaimedLocked(old_slot);  // cannot complete it: the late row is pending
  Slot* fresh = nullptr;
  try {
    std::vector<int> timed_out(old_slot->timed_out.begin(),
                               old_slot->timed_out.begin() + old_slot->planned_rows);
    timed_out[static_cast<size_t>(late.row)] = late.attempt + 1;
    fresh = pool_->TakeFreeLocked();
    if (fresh == nullptr) {
      pool_->GrowLocked();  // the old slot is out of use until the late load returns
      fresh = pool_->TakeFreeLocked();
    }
    BindLocked(fresh, old_slot->batch_index);
    std::copy(timed_out.begin(), timed_out.end(), fresh->timed_out.begin());
    retry_.push_back(fresh);
  } catch (...) {
    if (fresh != nullptr) pool_->PutLocked(fresh);
    InterruptLocked(std::current_exception());  // without memory the batch cannot be loaded
    return;
  }
  pool_->WakeWorkers();
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
  bool wake_consumer = false;
  bool wake_workers = false;
  {
    MutexLock lock(&mu());
    if (stale || slot->generation != generation_.load() || slot->orphaned.load()) {
      if (slot->orphaned.exchange(false)) --orphaned_slots_;
      pool_->PutLocked(slot);  // a free slot is new work
      pool_->ShrinkLocked();
      wake_workers = pool_->workers_waiting_locked();
    } else {
      CountOutcomes(slot);
      hold_back_.NoteCompletion(*slot);
      slot->state = SlotState::kReady;
      progress_.fetch_add(1, std::memory_order_release);
      wake_consumer = consumer_waiting_ > 0;
      ready = true;
    }
  }
  if (wake_consumer) ready_cv_.NotifyOne();
  if (wake_workers) pool_->WakeWorkers();
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
    hold_back_.NoteConsumerTook(*pool_, static_cast<size_t>(best->planned_rows), active_workers_);
  }
  return best;
}

std::optional<Batch> Scheduler::DeliverLocked(Slot* slot) {
  cursor_.CountDelivered();
  if (batch_per_worker_ && batch_sampler_ != nullptr && slot->producer >= 0 &&
      static_cast<size_t>(slot->producer) < own_undelivered_.size()) {
    --own_undelivered_[static_cast<size_t>(slot->producer)];
    slot->producer = -1;
    pool_->WakeWorkers();  // its owner may be waiting for its quota
  }
  if (slot->raise) {
    SampleError error = *slot->raise;
    pool_->PutLocked(slot);
    pool_->WakeWorkers();
    if (error.reason() == "timeout") throw TimeoutError(error);
    throw error;
  }
  if (slot->rows == 0) {  // every sample skipped
    pool_->PutLocked(slot);
    pool_->WakeWorkers();
    return std::nullopt;
  }
  pool_->MarkDeliveredLocked(slot);
  stats_->AddBatch();
  stats_->MarkFirstBatch();
  return BatchAccess::Make(pool_, slot);
}

void Scheduler::GrowIfCallerHoldsEverySlotLocked() {
  // Slots waiting for a late load (timeouts) are as unusable as held ones.
  // A loop, not one step: after the slot limit was lowered the caller may
  // hold more slots than the limit allows.
  bool grown = false;
  while (!pool_->HasFreeLocked() && pool_->delivered_count_locked() + orphaned_slots_ >=
                                        pool_->limit_locked() + pool_->grown_locked()) {
    pool_->GrowLocked();  // nothing can be loaded otherwise: make one more slot
    grown = true;
  }
  // With batches owned by workers, another worker may have taken the slots
  // out of turn (its later batches) while the caller keeps what it got: the
  // awaited batch's owner then gets one more, or nothing would be loaded.
  if (batch_per_worker_ && options_.in_order && cursor_.running() && !pool_->HasFreeLocked() &&
      cursor_.next_to_deliver() < cursor_.plan().num_batches() &&
      !BoundLocked(cursor_.next_to_deliver())) {
    pool_->GrowLocked();
    grown = true;
  }
  if (grown) pool_->WakeWorkers();
}

bool Scheduler::BoundLocked(int64_t batch_index) const {
  const uint64_t generation = generation_.load();
  for (const auto& slot : pool_->slots_locked()) {
    if (slot->generation == generation && slot->batch_index == batch_index &&
        (slot->state == SlotState::kFilling || slot->state == SlotState::kReady)) {
      return true;
    }
  }
  return false;
}

bool Scheduler::WaitForProgressLocked(std::optional<Clock::time_point> deadline,
                                      std::optional<std::chrono::milliseconds> wake_after) {
  hold_back_.NoteConsumerWaits();
  // Released slots may have been left for later (SlotPool's batched
  // wake-ups): with the consumer about to wait, the workers need them now.
  if (pool_->workers_waiting_locked() && pool_->HasFreeLocked()) {
    // With batches owned by workers only the owner of the next one can use
    // the slot, and any may be it: all look.
    if (workers_parked() || batch_sampler_ == nullptr || batch_per_worker_) {
      pool_->WakeWorkers();
    } else {
      pool_->WakeOneWorker();
    }
  }
  if (deadline && Clock::now() >= *deadline) {
    // TryNext returns kPending: the consumer may go on with other work
    // (SlotHoldBack), or be back at once (Python waits in slices).
    hold_back_.NoteConsumerAway(Clock::now());
    return false;
  }
  // A batch usually completes within microseconds of the last: poll briefly
  // (yielding the core to the workers) before paying for a futex sleep and
  // the wake-up a worker would have to send.
  const uint64_t seen = progress_.load(std::memory_order_acquire);
  {
    MutexUnlock unlock(&mu());
    for (int spin = 0; spin < kConsumerPolls; ++spin) {
      if (progress_.load(std::memory_order_acquire) != seen) break;
      std::this_thread::yield();
    }
  }
  // progress_ only changes under the lock, so this predicate cannot miss a
  // change made while the lock was dropped for polling.
  auto moved = [&] { return progress_.load(std::memory_order_relaxed) != seen; };
  if (moved()) return true;
  ++consumer_waiting_;
  if (wake_after) {
    auto until = Clock::now() + *wake_after;
    if (deadline && *deadline < until) until = *deadline;
    while (!moved() && ready_cv_.WaitUntil(&mu(), until)) {
    }
  } else if (deadline) {
    while (!moved() && ready_cv_.WaitUntil(&mu(), *deadline)) {
    }
  } else {
    while (!moved()) ready_cv_.Wait(&mu());
  }
  --consumer_waiting_;
  return true;
}

void Scheduler::NotifyProgressLocked() {
  progress_.fetch_add(1, std::memory_order_release);
  ready_cv_.NotifyAll();
}

// ---------------------------------------------------------------------------
// What ends iteration

void Scheduler::FailLocked(std::exception_ptr error) {
  fatal_ = std::move(error);
  NotifyProgressLocked();
}

void Scheduler::Interrupt(std::exception_ptr error, uint64_t generation) {
  MutexLock lock(&mu());
  // Work of an abandoned epoch: nobody waits for it any more.
  if (generation != generation_.load()) return;
  InterruptLocked(std::move(error));
}

void Scheduler::InterruptLocked(std::exception_ptr error) {
  if (!interrupt_) interrupt_ = std::move(error);
  AbandonEpochLocked();
  NotifyProgressLocked();
}

void Scheduler::ThrowPendingLocked() {
  if (fatal_) std::rethrow_exception(fatal_);
  ThrowInterruptLocked();
}

void Scheduler::ThrowInterruptLocked() {
  if (!interrupt_) return;
  std::exception_ptr error = std::move(interrupt_);
  interrupt_ = nullptr;
  std::rethrow_exception(error);
}

// ---------------------------------------------------------------------------
// Runtime controls

void Scheduler::SetSlotLimitLocked(int n) {
  pool_->SetLimitLocked(n);
  pool_->WakeWorkers();  // a raised limit is new work
}

void Scheduler::SetActiveWorkersLocked(int n) {
  active_workers_ = std::clamp(n, 1, num_workers_);
  workers_parked_.store(active_workers_ < num_workers_, std::memory_order_relaxed);
  // A parked worker may be the one a single wake reaches.
  pool_->set_wake_one_on_release(batch_sampler_ != nullptr && active_workers_ == num_workers_ &&
                                 !batch_per_worker_);
  // Workers let back in were parked waiting for work.
  pool_->WakeWorkers();
}

}  // namespace feedline::internal
