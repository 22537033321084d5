#include "src/process/collated_batches.h"

#include <new>
#include <utility>

#include "feedline/error.h"
#include "src/core/sample_binder.h"

namespace feedline::internal {

struct CollatedBatches::Entry {
  Sample sample;
  SlotBlock block;  // the room; empty for none
};

CollatedBatches::CollatedBatches(std::shared_ptr<SharedSlotAllocator> slots)
    : slots_(std::move(slots)) {}

CollatedBatches::~CollatedBatches() {
  MutexLock lock(&mu_);
  for (auto& entry : idle_) FreeBlock(entry->block);
}

uint64_t CollatedBatches::room_wanted() const {
  const uint64_t largest = largest_.load(std::memory_order_relaxed);
  if (largest == 0 || slots_ == nullptr) return 0;
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  return (largest + largest / 4 + kMiB - 1) / kMiB * kMiB;
}

void CollatedBatches::Saw(uint64_t bytes) {
  uint64_t largest = largest_.load(std::memory_order_relaxed);
  while (bytes > largest && !largest_.compare_exchange_weak(largest, bytes)) {
  }
}

CollatedBatches::Lease CollatedBatches::Take() {
  std::unique_ptr<Entry> entry;
  {
    MutexLock lock(&mu_);
    if (!idle_.empty()) {
      entry = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!entry) entry = std::make_unique<Entry>();
  const uint64_t wanted = room_wanted();
  if (entry->block.bytes < wanted) {
    // The batches grew: a larger room (the old one is given back first, so
    // the two never hold the reservation at once).
    FreeBlock(entry->block);
    try {
      entry->block = slots_->Allocate(wanted);
    } catch (const std::bad_alloc&) {
    } catch (const Error&) {
      // The slots are full: this batch goes through the arena.
    }
    if (entry->block.bytes > 0 && slots_->OffsetOf(entry->block.data) < 0) {
      FreeBlock(entry->block);  // from the heap: the worker cannot write it
    }
  }
  Lease lease;
  if (entry->block.bytes > 0) {
    lease.room_offset = static_cast<uint64_t>(slots_->OffsetOf(entry->block.data));
    lease.room_bytes = entry->block.bytes;
  }
  Entry* raw = entry.release();
  // The deleter holds the pool: a batch may outlive the loader.
  std::shared_ptr<CollatedBatches> pool = shared_from_this();
  lease.sample = std::shared_ptr<Sample>(&raw->sample, [pool, raw](Sample*) { pool->Give(raw); });
  return lease;
}

void CollatedBatches::Give(Entry* entry) {
  std::unique_ptr<Entry> owned(entry);
  SampleBinder::Unbind(owned->sample);
  owned->sample.Clear();
  {
    MutexLock lock(&mu_);
    if (idle_.size() < kMaxIdle) {
      idle_.push_back(std::move(owned));
      return;
    }
  }
  FreeBlock(owned->block);
}

void CollatedBatches::FreeBlock(SlotBlock& block) noexcept {
  if (block.bytes > 0) slots_->Free(block);
  block = SlotBlock();
}

}  // namespace feedline::internal
