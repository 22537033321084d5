#include "src/loader/slot_pool.h"

#include <algorithm>
#include <utility>

namespace feedline::internal {

SlotPool::SlotPool(int limit, std::shared_ptr<SlotAllocator> allocator,
                   std::shared_ptr<SchedulerLock> lock)
    : lock_(std::move(lock)), allocator_(std::move(allocator)), limit_(std::max(1, limit)) {
  slots_.reserve(static_cast<size_t>(limit_));
  free_.reserve(static_cast<size_t>(limit_));
}

void SlotPool::SetLimitLocked(int limit) {
  limit_ = std::max(1, limit);
  ShrinkLocked();
  lock_->wakeups.WakeAll();
}

Slot* SlotPool::TakeFreeLocked() {
  if (!HasFreeLocked()) return nullptr;
  // Reuse before growing: a slot is created only when every existing one is
  // in use, so a pipeline that needs two slots never pays for (or first
  // touches) more, whatever the limit allows.
  if (!free_.empty()) {
    Slot* s = free_.back();
    free_.pop_back();
    return s;
  }
  slots_.push_back(std::make_unique<Slot>());
  slots_.back()->allocator = allocator_.get();
  free_.reserve(slots_.size());
  return slots_.back().get();
}

bool SlotPool::HasFreeLocked() const { return in_use_locked() < limit_ + grown_; }

void SlotPool::PutLocked(Slot* slot) {
  if (slot->attachment != nullptr) detached_.push_back(std::move(slot->attachment));
  if (slot->state == SlotState::kDelivered) --delivered_;
  slot->state = SlotState::kFree;
  free_.push_back(slot);
}

void SlotPool::ShrinkLocked() {
  const size_t keep = static_cast<size_t>(limit_) + static_cast<size_t>(delivered_);
  int destroyed = 0;
  while (slots_.size() > static_cast<size_t>(limit_) && slots_.size() > keep &&
         !free_.empty()) {
    Slot* victim = free_.back();
    free_.pop_back();
    auto it = std::find_if(slots_.begin(), slots_.end(),
                           [victim](const std::unique_ptr<Slot>& s) { return s.get() == victim; });
    slots_.erase(it);
    ++destroyed;
  }
  grown_ = std::max(0, grown_ - destroyed);
}

int64_t SlotPool::LargestSlotBytesLocked() const {
  size_t largest = 0;
  for (const auto& slot : slots_) largest = std::max(largest, slot->storage_bytes());
  return static_cast<int64_t>(largest);
}

SlotUsage SlotPool::UsageLocked() const {
  SlotUsage usage;
  usage.limit = limit_;
  usage.created = static_cast<int>(slots_.size());
  usage.in_use = in_use_locked();
  usage.bytes = allocator_->bytes_in_use();
  usage.largest_slot_bytes = LargestSlotBytesLocked();
  return usage;
}

void SlotPool::MarkDeliveredLocked(Slot* slot) {
  slot->state = SlotState::kDelivered;
  ++delivered_;
}

void SlotPool::Release(Slot* slot) {
  bool wake = false;
  // Destroyed after the lock is dropped. The slot is this caller's alone
  // (its last handle is gone): what it carries is taken here, so that the
  // steady state allocates nothing for it (no detached_ entry per batch).
  std::shared_ptr<const void> attachment = std::move(slot->attachment);
  std::unique_ptr<Slot> given_back;
  std::vector<std::shared_ptr<const void>> detached;
  {
    MutexLock lock(&lock_->mu);
    PutLocked(slot);
    detached = TakeDetachedLocked();
    // Never below what the consumer still holds plus one to fill: a loop
    // that keeps its previous batch must not destroy and make a slot per batch.
    const size_t keep = static_cast<size_t>(std::max(keep_on_release_, delivered_ + 1));
    if (keep_on_release_ > 0 && slots_.size() > keep) {
      free_.pop_back();  // `slot`, just put there
      auto it = std::find_if(slots_.begin(), slots_.end(),
                             [slot](const std::unique_ptr<Slot>& s) { return s.get() == slot; });
      given_back = std::move(*it);
      slots_.erase(it);
      grown_ = std::max(0, grown_ - 1);
    }
    ShrinkLocked();
    wake = lock_->wakeups.AnyWaiting() &&
           (!lock_->wakeups.batch_release_wakes() || FreeCountLocked() >= std::max(1, limit_ / 2));
  }
  if (!wake) return;
  if (lock_->wakeups.wake_one_on_release()) {
    lock_->wakeups.WakeOne();
  } else {
    lock_->wakeups.WakeAll();
  }
}

}  // namespace feedline::internal
