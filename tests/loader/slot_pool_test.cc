// SlotPool: batch slots made on demand up to the limit, reused before more
// are made, given back by the last Batch handle (Release), which wakes the
// workers that wait for a free slot.
#include "src/loader/slot_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "src/core/mutex.h"
#include "src/loader/scheduler_lock.h"
#include "src/loader/slot_allocator.h"
#include "loader/within_seconds.h"

namespace feedline::internal {
namespace {

class SlotPoolTest : public ::testing::Test {
 protected:
  std::unique_ptr<SlotPool> MakePool(int limit) {
    return std::make_unique<SlotPool>(limit, allocator_, lock_);
  }
  std::shared_ptr<HeapSlotAllocator> allocator_ = std::make_shared<HeapSlotAllocator>();
  std::shared_ptr<SchedulerLock> lock_ = std::make_shared<SchedulerLock>();
};

TEST_F(SlotPoolTest, MakesSlotsOnlyWhenNoneIsFreeUpToTheLimit) {
  auto pool = MakePool(3);
  EXPECT_EQ(pool->size_locked(), 0) << "no slot before one is needed";
  EXPECT_EQ(pool->limit_locked(), 3);
  Slot* a = pool->TakeFreeLocked();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->allocator, allocator_.get());
  EXPECT_EQ(pool->size_locked(), 1);
  pool->PutLocked(a);
  EXPECT_EQ(pool->TakeFreeLocked(), a) << "a free slot is reused before another is made";
  EXPECT_EQ(pool->size_locked(), 1);
  Slot* b = pool->TakeFreeLocked();
  Slot* c = pool->TakeFreeLocked();
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(b, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(pool->in_use_locked(), 3);
  EXPECT_FALSE(pool->HasFreeLocked());
  EXPECT_EQ(pool->FreeCountLocked(), 0);
  EXPECT_EQ(pool->TakeFreeLocked(), nullptr) << "the limit is reached";
  EXPECT_EQ(pool->slots_locked().size(), 3u);
}

// What a slot carries (a collate function's Python result) may run code
// when destroyed, code that releases another batch and so takes the lock:
// the pool never destroys it under the lock. This one takes the lock, and
// would deadlock there.
class TakesTheLock {
 public:
  TakesTheLock(SchedulerLock* lock, std::atomic<int>* destroyed)
      : lock_(lock), destroyed_(destroyed) {}
  ~TakesTheLock() {
    MutexLock lock(&lock_->mu);
    destroyed_->fetch_add(1);
  }

 private:
  SchedulerLock* const lock_;
  std::atomic<int>* const destroyed_;
};

TEST_F(SlotPoolTest, WhatASlotCarriesIsDestroyedWithoutTheLock) {
  auto pool = MakePool(2);
  std::atomic<int> destroyed{0};
  feedline::testing::WithinSeconds(30, [&] {
    // A delivered batch's last handle gives its slot back (Release).
    Slot* delivered = nullptr;
    {
      MutexLock lock(&lock_->mu);
      delivered = pool->TakeFreeLocked();
      delivered->attachment = std::make_shared<TakesTheLock>(lock_.get(), &destroyed);
      pool->MarkDeliveredLocked(delivered);
    }
    pool->Release(delivered);
    EXPECT_EQ(destroyed.load(), 1);
    // A batch never delivered goes back under the lock (an abandoned
    // epoch): what it carries is kept aside for the caller to drop.
    std::vector<std::shared_ptr<const void>> detached;
    {
      MutexLock lock(&lock_->mu);
      Slot* ready = pool->TakeFreeLocked();
      ready->attachment = std::make_shared<TakesTheLock>(lock_.get(), &destroyed);
      pool->PutLocked(ready);
      EXPECT_EQ(ready->attachment, nullptr);
      detached = pool->TakeDetachedLocked();
    }
    EXPECT_EQ(destroyed.load(), 1);
    detached.clear();
    EXPECT_EQ(destroyed.load(), 2);
    // Kept aside and not taken: the next Release drops it, after the lock.
    {
      MutexLock lock(&lock_->mu);
      Slot* ready = pool->TakeFreeLocked();
      ready->attachment = std::make_shared<TakesTheLock>(lock_.get(), &destroyed);
      pool->PutLocked(ready);
      delivered = pool->TakeFreeLocked();
      pool->MarkDeliveredLocked(delivered);
    }
    pool->Release(delivered);
    EXPECT_EQ(destroyed.load(), 3);
  });
}

TEST_F(SlotPoolTest, TheLimitIsAtLeastOne) {
  auto pool = MakePool(0);
  EXPECT_EQ(pool->limit_locked(), 1);
  EXPECT_NE(pool->TakeFreeLocked(), nullptr);
  EXPECT_EQ(pool->TakeFreeLocked(), nullptr);
  pool->SetLimitLocked(-5);
  EXPECT_EQ(pool->limit_locked(), 1);
}

TEST_F(SlotPoolTest, GrowingAddsRoomForOneMoreSlot) {
  auto pool = MakePool(1);
  ASSERT_NE(pool->TakeFreeLocked(), nullptr);
  EXPECT_EQ(pool->TakeFreeLocked(), nullptr);
  pool->GrowLocked();
  EXPECT_EQ(pool->grown_locked(), 1);
  EXPECT_EQ(pool->FreeCountLocked(), 1);
  EXPECT_NE(pool->TakeFreeLocked(), nullptr);
  EXPECT_EQ(pool->TakeFreeLocked(), nullptr);
}

TEST_F(SlotPoolTest, ALoweredLimitDestroysFreeSlotsBeyondItAndKeepsThoseInUse) {
  auto pool = MakePool(4);
  std::vector<Slot*> slots;
  for (int i = 0; i < 4; ++i) slots.push_back(pool->TakeFreeLocked());
  pool->PutLocked(slots[0]);
  pool->PutLocked(slots[1]);
  pool->SetLimitLocked(1);
  // Two in use stay; the free ones go (more slots than the limit exist).
  EXPECT_EQ(pool->size_locked(), 2);
  EXPECT_EQ(pool->in_use_locked(), 2);
  EXPECT_EQ(pool->TakeFreeLocked(), nullptr);
  pool->SetLimitLocked(3);
  EXPECT_EQ(pool->FreeCountLocked(), 1);
  EXPECT_NE(pool->TakeFreeLocked(), nullptr);
}

TEST_F(SlotPoolTest, DeliveredSlotsAreCountedUntilTheyComeBack) {
  auto pool = MakePool(2);
  Slot* slot = pool->TakeFreeLocked();
  pool->MarkDeliveredLocked(slot);
  EXPECT_EQ(slot->state, SlotState::kDelivered);
  EXPECT_EQ(pool->delivered_count_locked(), 1);
  pool->Release(slot);
  EXPECT_EQ(slot->state, SlotState::kFree);
  EXPECT_EQ(pool->delivered_count_locked(), 0);
  EXPECT_EQ(pool->in_use_locked(), 0);
  EXPECT_EQ(pool->size_locked(), 1) << "kept for reuse";
}

// `n` batches delivered, the caller keeping them all: the pool grows past
// its limit for them.
std::vector<Slot*> DeliverKept(SlotPool* pool, int n) {
  std::vector<Slot*> held;
  for (int i = 0; i < n; ++i) {
    if (!pool->HasFreeLocked()) pool->GrowLocked();
    Slot* slot = pool->TakeFreeLocked();
    pool->MarkDeliveredLocked(slot);
    held.push_back(slot);
  }
  return held;
}

TEST_F(SlotPoolTest, KeepOnReleaseGivesBackSlotsBeyondWhatIsHeldPlusOne) {
  auto pool = MakePool(3);
  std::vector<Slot*> held = DeliverKept(pool.get(), 6);
  EXPECT_EQ(pool->size_locked(), 6);
  pool->set_keep_on_release_locked(1);
  pool->Release(held[0]);  // 5 held: 6 slots are held + 1
  EXPECT_EQ(pool->size_locked(), 6);
  pool->Release(held[1]);  // 4 held
  EXPECT_EQ(pool->size_locked(), 5);
  for (size_t i = 2; i < held.size(); ++i) pool->Release(held[i]);
  EXPECT_EQ(pool->size_locked(), 1) << "below the limit: the memory is given back";
  EXPECT_EQ(pool->in_use_locked(), 0);
  EXPECT_EQ(pool->grown_locked(), 0);
}

TEST_F(SlotPoolTest, WithoutKeepOnReleaseReleasedSlotsAreKeptUpToTheLimitPlusHeld) {
  auto pool = MakePool(3);
  std::vector<Slot*> held = DeliverKept(pool.get(), 6);
  pool->Release(held[0]);
  pool->Release(held[1]);
  EXPECT_EQ(pool->size_locked(), 6) << "4 held + the limit of 3";
  for (size_t i = 2; i < held.size(); ++i) pool->Release(held[i]);
  EXPECT_EQ(pool->size_locked(), 3);
}

TEST_F(SlotPoolTest, KeptBatchesGrowThePoolAndTheirMemoryGoesOnceTheyComeBack) {
  auto pool = MakePool(1);
  std::vector<Slot*> held = DeliverKept(pool.get(), 3);
  EXPECT_EQ(pool->size_locked(), 3);
  for (Slot* slot : held) pool->Release(slot);
  EXPECT_EQ(pool->size_locked(), 1) << "the memory of kept batches goes once they come back";
  EXPECT_EQ(pool->grown_locked(), 0);
}

TEST_F(SlotPoolTest, UsageReportsSlotsAndTheirStorage) {
  auto pool = MakePool(3);
  Slot* a = pool->TakeFreeLocked();
  Slot* b = pool->TakeFreeLocked();
  a->AddField("x").storage.resize(1000);
  b->AddField("y").storage.resize(10);
  pool->PutLocked(b);
  const SlotUsage usage = pool->UsageLocked();
  EXPECT_EQ(usage.limit, 3);
  EXPECT_EQ(usage.created, 2);
  EXPECT_EQ(usage.in_use, 1);
  EXPECT_GE(usage.largest_slot_bytes, 1000);
  EXPECT_EQ(usage.bytes, allocator_->bytes_in_use());
  EXPECT_GE(usage.bytes, 1010);
}

TEST_F(SlotPoolTest, AReleasedSlotWakesAWorkerWaitingForOne) {
  auto pool = MakePool(1);
  Slot* slot = nullptr;
  {
    MutexLock lock(&lock_->mu);
    slot = pool->TakeFreeLocked();
    pool->MarkDeliveredLocked(slot);
  }
  Slot* taken = nullptr;
  std::thread worker([&] {
    MutexLock lock(&lock_->mu);
    while ((taken = pool->TakeFreeLocked()) == nullptr) lock_->wakeups.Wait(lock_->mu);
  });
  while (true) {
    MutexLock lock(&lock_->mu);
    if (lock_->wakeups.AnyWaiting()) break;
  }
  pool->Release(slot);  // takes the lock itself, from the last Batch handle
  worker.join();
  EXPECT_EQ(taken, slot);
}

TEST_F(SlotPoolTest, ABatchOfReleasesWakesOnlyOnceHalfTheLimitIsFree) {
  auto pool = MakePool(4);
  std::vector<Slot*> held;
  {
    MutexLock lock(&lock_->mu);
    for (int i = 0; i < 4; ++i) {
      held.push_back(pool->TakeFreeLocked());
      pool->MarkDeliveredLocked(held.back());
    }
  }
  lock_->wakeups.set_batch_release_wakes(true);
  std::atomic<int> free_seen{-1};
  std::thread worker([&] {
    MutexLock lock(&lock_->mu);
    // Waits once: a wake-up comes only from a Release.
    lock_->wakeups.Wait(lock_->mu);
    free_seen = pool->FreeCountLocked();
  });
  while (true) {
    MutexLock lock(&lock_->mu);
    if (lock_->wakeups.AnyWaiting()) break;
  }
  pool->Release(held[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(free_seen.load(), -1) << "one free slot of 4 wakes nobody";
  pool->Release(held[1]);
  worker.join();
  EXPECT_EQ(free_seen.load(), 2);
}

}  // namespace
}  // namespace feedline::internal
