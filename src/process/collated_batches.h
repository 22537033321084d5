// CollatedBatches: where the batches that worker processes collate are
// written and read. Each is a Sample over a block of the shared batch slots
// (its room): the worker writes the batch's arrays into the room, and the
// training process reads them there, bound into the Sample, without a copy
// (a field that does not fit goes through the arena and is copied into the
// Sample's own storage, as before rooms). A batch that is let go comes back
// with its block once the last pointer to it (the arrays made over it) is
// dropped, and the next batch reuses both: the block's pages stay committed
// and mapped in every process, so neither side takes a page fault or a
// zero-fill for it again.
//
// How large a room is: the largest batch read so far (Saw), a quarter more,
// rounded up to a MiB; the first batch, with nothing seen, goes through the
// arena. A block that the slots' reservation cannot give (it came from the
// heap) is no room: its batch goes through the arena too.
//
// Thread safety: Take, Saw and the release of what Take gave may happen on
// any thread; what Take gives may outlive the pool's owner.
//
// Example:
//   CollatedBatches::Lease batch = batches->Take();
//   request.room_offset = batch.room_offset;  ... read the reply into
//   *batch.sample, binding the fields in the room ...
//   batches->Saw(bytes of the batch's fields);
#ifndef FEEDLINE_SRC_PROCESS_COLLATED_BATCHES_H_
#define FEEDLINE_SRC_PROCESS_COLLATED_BATCHES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "feedline/sample.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/slot_allocator.h"
#include "src/process/shared_slot_allocator.h"

namespace feedline::internal {

class CollatedBatches : public std::enable_shared_from_this<CollatedBatches> {
 public:
  // `slots`: where rooms come from; null gives none (no shared memory).
  explicit CollatedBatches(std::shared_ptr<SharedSlotAllocator> slots);
  ~CollatedBatches();
  CollatedBatches(const CollatedBatches&) = delete;
  CollatedBatches& operator=(const CollatedBatches&) = delete;

  struct Lease {
    // Cleared and unbound; returns here when the last copy is dropped.
    std::shared_ptr<Sample> sample;
    // The room, in the slots (room_bytes 0: none).
    uint64_t room_offset = 0;
    uint64_t room_bytes = 0;
  };
  // A Sample for the next batch, with a room for the largest batch seen.
  Lease Take();
  // A batch of `bytes` was read: later rooms hold it.
  void Saw(uint64_t bytes);

  // The room Take would give now (0 before any batch was seen).
  uint64_t room_wanted() const;

 private:
  // The most idle Samples kept (each holds its room).
  static constexpr size_t kMaxIdle = 4;
  struct Entry;
  void Give(Entry* entry);
  void FreeBlock(SlotBlock& block) noexcept;

  const std::shared_ptr<SharedSlotAllocator> slots_;
  std::atomic<uint64_t> largest_{0};
  Mutex mu_;
  std::vector<std::unique_ptr<Entry>> idle_ GUARDED_BY(mu_);
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_COLLATED_BATCHES_H_
