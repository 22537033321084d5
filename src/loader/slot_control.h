// SlotControl: the Scheduler's verbs about its batch slots (a layer over
// WorkerControl and SchedulerState, scheduler_state.h): the slot limit and
// usage (the runtime controls, a tuner's budget), and the slots a stream's
// producer binds its own batches to.
//
// Thread safety: every function REQUIRES the scheduler's mutex.
#ifndef FEEDLINE_SRC_LOADER_SLOT_CONTROL_H_
#define FEEDLINE_SRC_LOADER_SLOT_CONTROL_H_

#include <cstdint>

#include "src/core/thread_annotations.h"
#include "src/loader/slot.h"
#include "src/loader/slot_pool.h"
#include "src/loader/worker_control.h"

namespace feedline::internal {

class SlotControl : public WorkerControl {
 public:
  using WorkerControl::WorkerControl;

  // The most slots in use at once (SlotPool::SetLimitLocked).
  void SetSlotLimitLocked(int n) REQUIRES(mu()) { pool_->SetLimitLocked(n); }
  int slot_limit_locked() const REQUIRES(mu()) { return pool_->limit_locked(); }
  SlotUsage SlotUsageLocked() const REQUIRES(mu()) { return pool_->UsageLocked(); }

  // A slot can be taken now; a free slot (never null: call after
  // HasFreeSlotLocked, or after GrowSlotsLocked); a slot given back unused.
  bool HasFreeSlotLocked() const REQUIRES(mu()) { return pool_->HasFreeLocked(); }
  Slot* TakeFreeSlotLocked() REQUIRES(mu()) { return pool_->TakeFreeLocked(); }
  void PutSlotLocked(Slot* slot) REQUIRES(mu()) { pool_->PutLocked(slot); }
  // One slot more than the limit, and the workers woken for it.
  void GrowSlotsLocked() REQUIRES(mu()) {
    pool_->GrowLocked();
    lock_->wakeups.WakeAll();
  }
  // The first slot of the running epoch (its generation) that `match`
  // accepts, or nullptr.
  template <typename Match>
  Slot* FindSlotLocked(const Match& match) const REQUIRES(mu()) {
    const uint64_t generation = generation_.load();
    for (const auto& slot : pool_->slots_locked()) {
      if (slot->generation == generation && match(*slot)) return slot.get();
    }
    return nullptr;
  }

 protected:
  ~SlotControl() = default;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_CONTROL_H_
