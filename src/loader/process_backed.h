// ProcessBacked: what the engine asks of a dataset whose samples load in
// worker processes (src/process/process_dataset.h): the allocator its batch
// slots must come from, so that the processes can write their rows straight
// into them, and how many worker processes were started again after one died
// (StatsSnapshot::worker_restarts). The engine finds it with dynamic_cast on
// its dataset; other datasets get heap slots and no restarts.
//
// Thread safety: both calls from any thread.
#ifndef FEEDLINE_SRC_LOADER_PROCESS_BACKED_H_
#define FEEDLINE_SRC_LOADER_PROCESS_BACKED_H_

#include <cstdint>
#include <memory>

#include "src/loader/slot_allocator.h"

namespace feedline::internal {

class ProcessBacked {
 public:
  virtual ~ProcessBacked() = default;
  // Null: the slots may live on the heap (samples cross a socket).
  virtual std::shared_ptr<SlotAllocator> slot_allocator() const = 0;
  virtual int64_t worker_restarts() const = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_PROCESS_BACKED_H_
