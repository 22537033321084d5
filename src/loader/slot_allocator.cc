#include "src/loader/slot_allocator.h"

#include <new>

namespace feedline::internal {

SlotBlock SlotAllocator::Allocate(size_t bytes) {
  if (bytes == 0) return SlotBlock{};
  SlotBlock block = DoAllocate(bytes);
  bytes_in_use_.fetch_add(static_cast<int64_t>(block.bytes), std::memory_order_relaxed);
  return block;
}

void SlotAllocator::Free(const SlotBlock& block) noexcept {
  if (block.data == nullptr) return;
  bytes_in_use_.fetch_sub(static_cast<int64_t>(block.bytes), std::memory_order_relaxed);
  DoFree(block);
}

SlotBlock HeapSlotAllocator::DoAllocate(size_t bytes) {
  SlotBlock block;
  block.data = static_cast<std::byte*>(::operator new(bytes, std::align_val_t{kAlignment}));
  block.bytes = bytes;
  return block;
}

void HeapSlotAllocator::DoFree(const SlotBlock& block) noexcept {
  ::operator delete(block.data, std::align_val_t{kAlignment});
}

}  // namespace feedline::internal
