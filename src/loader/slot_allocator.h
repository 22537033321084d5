// SlotAllocator: where the batch storage of slots comes from.
//
// A slot's fields hold whole batches, written in place by the workers and
// handed to the consumer without a copy (a numpy array views them). Where
// that memory lives decides who can write it: the heap serves worker
// threads; worker processes need shared memory, and a GPU copy wants
// pinned memory. SlotPool asks its allocator for every block, so such an
// allocator can be added without touching the engine.
//
// An allocator must be thread-safe: slots are sized under the scheduler's
// lock by whichever thread binds a batch, and freed by whichever thread
// drops the last Batch handle (possibly after the loader is gone, so the
// pool keeps its allocator alive).
//
// Example:
//   auto heap = std::make_shared<HeapSlotAllocator>();
//   SlotBlock block = heap->Allocate(1 << 20);  // 64-byte aligned, not zeroed
//   ...
//   heap->Free(block);
#ifndef FEEDLINE_SRC_LOADER_SLOT_ALLOCATOR_H_
#define FEEDLINE_SRC_LOADER_SLOT_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace feedline::internal {

// One block of slot storage.
struct SlotBlock {
  std::byte* data = nullptr;
  size_t bytes = 0;
  // The allocator's own name for the block (for shared memory: which
  // segment and offset, so that another process can map it); 0 for the heap.
  uint64_t handle = 0;
};

class SlotAllocator {
 public:
  // Blocks start (and, for allocators that can, are sized) on this boundary,
  // so vector code writing batch rows can use aligned and streaming stores.
  static constexpr size_t kAlignment = 64;

  virtual ~SlotAllocator() = default;

  // A block of at least `bytes` bytes (0 gives an empty block), aligned to
  // kAlignment, not zeroed: every byte is written before it is read (see
  // SlotStorage). Throws std::bad_alloc, or an Error that says which limit
  // was reached and what to change.
  SlotBlock Allocate(size_t bytes);
  // Returns a block from Allocate of this allocator. An empty block is fine.
  void Free(const SlotBlock& block) noexcept;

  // Bytes in blocks handed out and not freed: what the slots take now.
  int64_t bytes_in_use() const { return bytes_in_use_.load(std::memory_order_relaxed); }
  // For messages and statistics ("heap", "shared memory", ...).
  virtual const char* name() const = 0;

 protected:
  virtual SlotBlock DoAllocate(size_t bytes) = 0;
  virtual void DoFree(const SlotBlock& block) noexcept = 0;

 private:
  std::atomic<int64_t> bytes_in_use_{0};
};

// Blocks from the process heap (aligned operator new): for worker threads.
class HeapSlotAllocator final : public SlotAllocator {
 public:
  const char* name() const override { return "heap"; }

 protected:
  SlotBlock DoAllocate(size_t bytes) override;
  void DoFree(const SlotBlock& block) noexcept override;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_ALLOCATOR_H_
