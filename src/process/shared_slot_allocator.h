// SharedSlotAllocator: batch slot storage in shared memory, so that worker
// processes write their samples straight into their batch rows.
//
// One anonymous file (memfd_create) is sized to a fixed reservation and
// mapped once, shared, when the allocator is made: before any worker process
// is forked. Every worker (a restarted one too) is forked from the loader
// process and so inherits the mapping at the same address; a slot made after
// a worker started lies inside the reservation and is already visible to it.
// Nothing is mapped again and no descriptor crosses a socket: a request
// names its rows by their offset in the reservation.
//
// How much is reserved (DefaultReservation): the batch slots' memory budget
// the tuner uses (a quarter of the available memory, capped by the cgroup,
// shared among the local ranks), and at most a quarter of the address space
// left under RLIMIT_AS (ulimit -v), so that several loaders and the job's
// own arrays still fit; at least 256 MB. A block that does not fit in what
// is left of the reservation comes from the heap instead (heap_blocks()
// counts them): the workers cannot see it, so its rows come back through
// their arenas, correct and one copy slower.
//
// The reservation costs address space only (the file is sparse and the
// mapping MAP_NORESERVE); a block's pages are committed with fallocate when
// it is handed out (a shortage is an Error naming the size, never a SIGBUS
// later) and returned to the system (hole punched) when it is freed. The
// file is sealed against shrinking (no process can cut the mapping under
// another's feet) and has no name: it is not bound by the size of /dev/shm
// (64 MB in a default Docker container) and disappears with the last process
// that maps it, whatever the ending (the workers die with the loader).
//
// Thread safety: Allocate and Free from any thread (an internal mutex);
// base(), reserved() and OffsetOf() are constant.
//
// Example:
//   auto slots = std::make_shared<SharedSlotAllocator>();
//   SlotBlock block = slots->Allocate(38 << 20);   // block.handle: its offset
//   ... fork: the child writes slots->base() + block.handle ...
//   slots->Free(block);
#ifndef FEEDLINE_SRC_PROCESS_SHARED_SLOT_ALLOCATOR_H_
#define FEEDLINE_SRC_PROCESS_SHARED_SLOT_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>

#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/slot_allocator.h"

namespace feedline::internal {

class SharedSlotAllocator final : public SlotAllocator {
 public:
  // Reserves `reserve_bytes` of address space (0: DefaultReservation()).
  // Throws Error naming the step that failed (memfd_create, ftruncate, mmap).
  explicit SharedSlotAllocator(size_t reserve_bytes = 0);
  // The rule above, read from this host and process now.
  static size_t DefaultReservation();
  ~SharedSlotAllocator() override;
  SharedSlotAllocator(const SharedSlotAllocator&) = delete;
  SharedSlotAllocator& operator=(const SharedSlotAllocator&) = delete;

  const char* name() const override { return "shared memory"; }

  std::byte* base() const { return base_; }
  size_t reserved() const { return reserved_; }
  // The offset of `p` in the reservation, or -1 if `p` is not in it.
  int64_t OffsetOf(const void* p) const;
  // Blocks that did not fit in the reservation and came from the heap.
  int64_t heap_blocks() const { return heap_blocks_.load(std::memory_order_relaxed); }

 protected:
  SlotBlock DoAllocate(size_t bytes) override;
  void DoFree(const SlotBlock& block) noexcept override;

 private:
  int fd_ = -1;
  std::byte* base_ = nullptr;
  size_t reserved_ = 0;
  Mutex mu_;
  size_t end_ GUARDED_BY(mu_) = 0;                 // bytes below it were handed out once
  std::map<size_t, size_t> free_ GUARDED_BY(mu_);  // offset -> bytes, below end_
  HeapSlotAllocator heap_;              // blocks past the reservation
  std::atomic<int64_t> heap_blocks_{0};
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_SHARED_SLOT_ALLOCATOR_H_
