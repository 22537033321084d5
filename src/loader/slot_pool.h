// SlotPool: the bounded set of batch slots (slot.h) a loader owns.
//
// Slots are created only when the pipeline needs one (a free slot is reused
// before another is made), up to the pool's limit, and then recycled: in
// steady state no memory is allocated. A delivered slot is referenced by
// Batch handles; when the last one dies the slot comes back (Release).
//
// The pool is shared (std::shared_ptr) between the engine and the Batch
// handles, so a batch may outlive its loader.
//
// Thread safety: the pool is a part of the Scheduler, guarded by the
// scheduler's lock (SchedulerLock): the Scheduler holds it PT_GUARDED_BY its
// mutex, so clang checks every call it and its parts make; the *Locked
// functions are called under that lock. Release(), called by the last Batch
// handle of a slot, takes the lock itself (the pool keeps it, since the
// handle may outlive the Scheduler) and wakes the workers waiting on its
// wake-ups for a free slot.
#ifndef FEEDLINE_SRC_LOADER_SLOT_POOL_H_
#define FEEDLINE_SRC_LOADER_SLOT_POOL_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/slot.h"
#include "src/loader/scheduler_lock.h"
#include "src/loader/slot_allocator.h"

namespace feedline::internal {

// The batch slots as they are now (for a tuner's memory budget).
struct SlotUsage {
  int limit = 0;                   // the most slots in use at once
  int created = 0;                 // slots that exist
  int in_use = 0;                  // filling, ready or held by the consumer
  int64_t bytes = 0;               // batch storage of all slots
  int64_t largest_slot_bytes = 0;  // batch storage of the largest slot
};

class SlotPool {
 public:
  // `limit`: the most slots in use at once (the prefetch depth); `allocator`
  // provides the batch storage and is kept as long as any slot lives;
  // `lock`: the scheduler's, taken by Release.
  SlotPool(int limit, std::shared_ptr<SlotAllocator> allocator,
           std::shared_ptr<SchedulerLock> lock);

  // The most slots in use (filling, ready or held by the consumer) at once;
  // starts at max(2, num_workers * prefetch_factor) and may be changed
  // while loading (SetLimitLocked).
  int limit_locked() const { return limit_; }
  // Changes the limit (at least 1) and wakes the workers (a raised limit is
  // new work). Slots in use beyond a lowered limit stay until they come
  // back; free ones beyond it are destroyed.
  void SetLimitLocked(int limit);
  // Adds room for one more slot, for a caller that holds every slot and
  // asks for more (as list(loader) does): what the caller keeps is beyond
  // the prefetch bound, and refusing would only deadlock.
  void GrowLocked() { ++grown_; }
  int grown_locked() const { return grown_; }

  // A slot to bind a batch to, or nullptr if limit + grown slots are in
  // use. A free slot is reused before another is created.
  Slot* TakeFreeLocked();
  // True if a slot can be taken now.
  bool HasFreeLocked() const;
  // How many slots can be taken now.
  int FreeCountLocked() const { return limit_ + grown_ - in_use_locked(); }
  // Returns a slot to the free list. What is attached to it (a collate
  // function's Python result, of a batch never delivered) is kept aside,
  // not destroyed: TakeDetachedLocked.
  void PutLocked(Slot* slot);
  // What PutLocked took off slots. The caller destroys it after releasing
  // the lock: destroying a Python object runs Python code, which may
  // release a batch, whose Release takes this lock (epoch_planner.h). What
  // no caller takes goes at the next Release, or with the pool.
  std::vector<std::shared_ptr<const void>> TakeDetachedLocked() {
    return std::exchange(detached_, {});
  }
  // Called by the last Batch handle of a delivered slot; wakes waiting workers.
  void Release(Slot* slot) EXCLUDES(lock_->mu);
  // With n > 0, a released slot is destroyed (its memory given back) while
  // more than n slots exist, and more than the batches the consumer still
  // holds plus one; 0: released slots are kept for reuse.
  void set_keep_on_release_locked(int n) { keep_on_release_ = n; }
  // Slots that exist now, and those of them in use (not free).
  int size_locked() const { return static_cast<int>(slots_.size()); }
  int in_use_locked() const {
    return static_cast<int>(slots_.size() - free_.size());
  }
  // Destroys free slots beyond both the limit and the batches held plus
  // the limit, so the memory of batches a caller kept (list(loader)) goes
  // once they are released, while a caller that keeps a few batches does
  // not make the pool allocate a slot per batch. REQUIRES: no one iterating
  // slots_locked().
  void ShrinkLocked();
  // Slots currently held by the consumer.
  int delivered_count_locked() const { return delivered_; }
  void MarkDeliveredLocked(Slot* slot);
  // All slots created so far.
  const std::vector<std::unique_ptr<Slot>>& slots_locked() const { return slots_; }
  SlotUsage UsageLocked() const;

 private:
  // The batch storage of the largest slot: what one more slot would cost.
  int64_t LargestSlotBytesLocked() const;

  const std::shared_ptr<SchedulerLock> lock_;
  // Declared before slots_: destroyed after them, since their storage
  // returns to it.
  const std::shared_ptr<SlotAllocator> allocator_;
  int limit_;
  int grown_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_;
  int delivered_ = 0;
  int keep_on_release_ = 0;
  std::vector<std::shared_ptr<const void>> detached_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_POOL_H_
