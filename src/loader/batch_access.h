// BatchAccess: how the loader hands a filled slot to the consumer as a Batch.
// Users only receive batches, so Batch's constructor over a slot is private
// and this class is its only friend.
#ifndef FEEDLINE_SRC_LOADER_BATCH_ACCESS_H_
#define FEEDLINE_SRC_LOADER_BATCH_ACCESS_H_

#include <memory>
#include <utility>

#include "feedline/batch.h"

namespace feedline::internal {

class BatchAccess {
 public:
  // A handle on `slot`, which returns to `pool` when the last handle dies.
  static Batch Make(std::shared_ptr<SlotPool> pool, Slot* slot) {
    return Batch(std::move(pool), slot);
  }
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_BATCH_ACCESS_H_
