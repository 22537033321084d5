#include "src/loader/row_claims.h"

#include <algorithm>
#include <span>

#include "src/loader/claim_policy.h"

namespace feedline::internal {

RowClaims::RowClaims(const LoaderOptions& options, bool map_style, bool round_trip_claims,
                     bool hold_back, SlotPool* pool, WorkerWakeups* wakeups,
                     const EpochCursor* cursor,
                     WorkerRoster* roster, const SlotLayout* layout,
                     const std::atomic<uint64_t>* generation)
    : options_(options),
      map_style_(map_style),
      pool_(pool),
      wakeups_(wakeups),
      cursor_(cursor),
      roster_(roster),
      layout_(layout),
      generation_(generation),
      batch_per_worker_(claim_policy::BatchPerWorker(options, map_style)),
      round_trip_claims_(round_trip_claims),
      hold_back_(hold_back, pool) {
  if (batch_per_worker_) {
    const size_t n = static_cast<size_t>(roster_->num_workers());
    own_next_.assign(n, 0);
    own_open_.assign(n, nullptr);
    own_undelivered_.assign(n, 0);
  }
}

void RowClaims::Start(int64_t first_batch) {
  next_bind_ = first_batch;
  if (batch_per_worker_) {
    // Round-robin from worker 0 at the first batch of this iteration (the
    // vectors are sized once, in the constructor: nothing here allocates).
    for (size_t w = 0; w < own_next_.size(); ++w) {
      own_next_[w] = first_batch + static_cast<int64_t>(w);
    }
    std::fill(own_open_.begin(), own_open_.end(), nullptr);
    std::fill(own_undelivered_.begin(), own_undelivered_.end(), 0);
  }
  open_ = nullptr;
  hold_back_.NoteEpochStart();
}

void RowClaims::DropUnclaimed() {
  if (open_ != nullptr) DropUnclaimedOf(open_);
  open_ = nullptr;
  for (Slot*& slot : own_open_) {
    if (slot != nullptr && slot->claimed < slot->planned_rows) DropUnclaimedOf(slot);
    slot = nullptr;
  }
  for (Slot* slot : retry_) DropUnclaimedOf(slot);
  retry_.clear();
}

void RowClaims::DropUnclaimedOf(Slot* slot) {
  const int64_t n = slot->planned_rows - slot->claimed;
  if (n <= 0) return;
  slot->claimed = slot->planned_rows;
  if (slot->finished.fetch_add(n, std::memory_order_acq_rel) + n == slot->planned_rows) {
    // Nothing was loading: nobody else will finish it.
    ReleaseOrphan(slot);
    pool_->PutLocked(slot);
  }
}

void RowClaims::ReleaseOrphan(Slot* slot) {
  if (slot->orphaned.exchange(false)) --orphaned_slots_;
}

bool RowClaims::HasWork(int worker) const {
  if (!cursor_->running() || worker >= roster_->active()) return false;
  for (const Slot* slot : retry_) {
    if (slot->claimed < slot->planned_rows) return true;
  }
  if (batch_per_worker_ && worker >= 0) return HasOwnWork(worker);
  if (open_ != nullptr && open_->claimed < open_->planned_rows) return true;
  return next_bind_ < cursor_->plan().num_batches() && pool_->HasFreeLocked() &&
         !HoldsBackNewSlot();
}

bool RowClaims::HoldsBackNewSlot() const {
  if (!hold_back_.on()) return false;
  const EpochPlan& plan = cursor_->plan();
  if (!cursor_->running() || next_bind_ >= plan.num_batches() || !retry_.empty()) return false;
  return hold_back_.HoldsBack(plan.batch(next_bind_).size(), roster_->active(),
                             generation_->load());
}

std::optional<RowClaims::Clock::time_point> RowClaims::HoldBackCheck() const {
  if (!HoldsBackNewSlot()) return std::nullopt;
  return SlotHoldBack::RecheckAt(Clock::now());
}

bool RowClaims::WorthWakingAnother(int worker) const {
  if (batch_per_worker_) return false;  // each worker has its own batches: none is another's
  if (!HasWork(worker)) return false;
  if (!wakeups_->batch_release_wakes() || !retry_.empty()) return true;
  if (open_ != nullptr && open_->claimed < open_->planned_rows) return true;
  return pool_->FreeCountLocked() >= 2 && cursor_->plan().num_batches() - next_bind_ >= 2;
}

void RowClaims::NoteRowCost(double ns_per_row, int64_t rows) {
  if (!map_style_) return;  // a stream's worker waits for its own turn
  row_ns_.store(ns_per_row, std::memory_order_relaxed);
  const bool cheap = claim_policy::CheapBatch(ns_per_row, rows);
  if (cheap != wakeups_->batch_release_wakes()) wakeups_->set_batch_release_wakes(cheap);
}

int RowClaims::LendWaitingWorker() {
  for (int w = 0; w < roster_->active(); ++w) {
    if (roster_->waiting(w) && !roster_->lent(w) && HasWork(w)) {
      roster_->Lend(w);
      return w;
    }
  }
  return -1;
}

void RowClaims::ReturnWorker(int worker) {
  // Only a wake the worker slept through while lent is made good: waking a
  // worker after every chunk the consumer loaded would cost the context
  // switches lending saves.
  if (!roster_->Return(worker)) return;
  if (!wakeups_->AnyWaiting() || !HasWork(worker)) return;
  roster_->WakeAnother();
}

void RowClaims::Bind(Slot* slot, int64_t batch_index) {
  std::span<const int64_t> rows = cursor_->plan().batch(batch_index);
  layout_->EnsureRows(slot, static_cast<int64_t>(rows.size()));
  slot->epoch = cursor_->epoch();
  slot->batch_index = batch_index;
  slot->generation = generation_->load();
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
  slot->planned_indices.assign(rows.begin(), rows.end());
  std::fill_n(slot->status.begin(), rows.size(), RowStatus::kPending);
  std::fill_n(slot->timed_out.begin(), rows.size(), 0);
}

bool RowClaims::HasOwnWork(int worker) const {
  const size_t w = static_cast<size_t>(worker);
  if (w >= own_next_.size()) return false;
  const Slot* open = own_open_[w];
  if (open != nullptr && open->claimed < open->planned_rows) return true;
  return own_next_[w] < cursor_->plan().num_batches() &&
         own_undelivered_[w] < options_.prefetch_factor && pool_->HasFreeLocked();
}

Slot* RowClaims::OwnBatch(int worker) {
  const size_t w = static_cast<size_t>(worker);
  if (w >= own_next_.size()) return nullptr;
  Slot* open = own_open_[w];
  if (open != nullptr && open->claimed < open->planned_rows) return open;
  own_open_[w] = nullptr;
  if (own_next_[w] >= cursor_->plan().num_batches() ||
      own_undelivered_[w] >= options_.prefetch_factor) {
    return nullptr;
  }
  Slot* fresh = pool_->TakeFreeLocked();
  if (fresh == nullptr) return nullptr;
  try {
    Bind(fresh, own_next_[w]);
  } catch (...) {
    pool_->PutLocked(fresh);  // std::bad_alloc sizing it: the slot stays usable
    throw;
  }
  fresh->producer = worker;  // its delivery gives the worker its quota back
  own_next_[w] += roster_->num_workers();
  ++own_undelivered_[w];
  own_open_[w] = fresh;
  return fresh;
}

bool RowClaims::Claim(int64_t chunk, Task* task, int worker) {
  // Batches bound again after a timeout go first: the consumer waits for them.
  while (!retry_.empty() && retry_.front()->claimed >= retry_.front()->planned_rows) {
    retry_.erase(retry_.begin());
  }
  Slot* slot = nullptr;
  if (!retry_.empty()) {
    slot = retry_.front();
  } else if (batch_per_worker_ && worker >= 0) {
    slot = OwnBatch(worker);
    if (slot == nullptr) return false;
    chunk = slot->planned_rows - slot->claimed;  // the whole batch, in one claim
  } else {
    if (open_ == nullptr || open_->claimed >= open_->planned_rows) {
      open_ = nullptr;
      if (next_bind_ >= cursor_->plan().num_batches() || HoldsBackNewSlot()) return false;
      Slot* fresh = pool_->TakeFreeLocked();
      if (fresh == nullptr) return false;
      try {
        Bind(fresh, next_bind_);
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
    chunk = std::max(chunk, claim_policy::RoundTripChunk(row_ns()));
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

void RowClaims::Rebind(const LateLoad& late) {
  Slot* old_slot = late.slot;
  ++orphaned_slots_;
  // Rows of the old slot nobody claimed yet are loaded in the new one.
  if (open_ == old_slot) open_ = nullptr;
  retry_.erase(std::remove(retry_.begin(), retry_.end(), old_slot), retry_.end());
  DropUnclaimedOf(old_slot);  // cannot complete it: the late row is pending
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
    Bind(fresh, old_slot->batch_index);
    std::copy(timed_out.begin(), timed_out.end(), fresh->timed_out.begin());
    retry_.push_back(fresh);
  } catch (...) {
    if (fresh != nullptr) pool_->PutLocked(fresh);
    throw;  // without memory the batch cannot be loaded
  }
  wakeups_->WakeAll();
}

void RowClaims::NoteDelivered(Slot* slot) {
  if (!batch_per_worker_ || slot->producer < 0 ||
      static_cast<size_t>(slot->producer) >= own_undelivered_.size()) {
    return;
  }
  --own_undelivered_[static_cast<size_t>(slot->producer)];
  slot->producer = -1;
  wakeups_->WakeAll();  // its owner may be waiting for its quota
}

void RowClaims::GrowIfCallerHoldsEverySlot() {
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
  if (batch_per_worker_ && options_.in_order && cursor_->running() && !pool_->HasFreeLocked() &&
      cursor_->next_to_deliver() < cursor_->plan().num_batches() &&
      !Bound(cursor_->next_to_deliver())) {
    pool_->GrowLocked();
    grown = true;
  }
  if (grown) wakeups_->WakeAll();
}

bool RowClaims::Bound(int64_t batch_index) const {
  const uint64_t generation = generation_->load();
  for (const auto& slot : pool_->slots_locked()) {
    if (slot->generation == generation && slot->batch_index == batch_index &&
        (slot->state == SlotState::kFilling || slot->state == SlotState::kReady)) {
      return true;
    }
  }
  return false;
}

}  // namespace feedline::internal
