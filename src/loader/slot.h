// Slot and SlotPool: the bounded set of batch buffers a loader owns.
//
// A Slot holds everything one batch needs: one reusable Sample per row, the
// batch tensors' storage, and bookkeeping for the rows in flight. Slots are
// created on first need, up to the pool's capacity, and then recycled: in
// steady state no memory is allocated. A delivered slot is referenced by Batch
// handles; when the last one dies the slot goes back to the free list.
//
// The pool is shared (std::shared_ptr) between the engine and the Batch
// handles, so a batch may outlive its loader. Its mutex, mu(), is also the
// engine's scheduler lock (the engine's state is GUARDED_BY(pool_->mu())): a
// released slot and new work must be seen under one lock by the workers that
// wait for either, so the workers wait on the pool (WaitForWorkLocked) and
// Release wakes them.
#ifndef FEEDLINE_SRC_LOADER_SLOT_H_
#define FEEDLINE_SRC_LOADER_SLOT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "feedline/collate.h"
#include "feedline/dataset.h"
#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/tensor.h"
#include "src/loader/byte_buffer.h"
#include "src/loader/mutex.h"
#include "src/loader/thread_annotations.h"

namespace feedline::internal {

// The per-row outcome of loading.
enum class RowStatus : uint8_t { kPending, kOk, kReplaced, kSkipped, kFailed, kCancelled };

struct SlotField {
  std::string name;
  Tensor tensor;
  ByteBuffer storage;  // not zeroed: see byte_buffer.h
  bool used = false;
  bool fixed = false;  // declared by the dataset and written in place
};

enum class SlotState : uint8_t { kFree, kFilling, kReady, kDelivered };

struct Slot {
  // Identity of the batch being filled or held.
  int64_t epoch = 0;
  int64_t batch_index = 0;
  uint64_t generation = 0;  // which epoch run; stale slots are discarded
  int producer = -1;        // iterable datasets: the worker that filled it
  int64_t producer_seq = 0;
  SlotState state = SlotState::kFree;

  // Rows as planned.
  int64_t planned_rows = 0;
  std::vector<int64_t> indices;  // dataset index per row (substitute if replaced)
  std::vector<RowStatus> status;
  std::vector<Sample> samples;
  std::vector<const Sample*> kept_rows;  // rows that survive, for collate
  int64_t claimed = 0;  // rows handed to workers (guarded by the pool mutex)
  std::atomic<int64_t> finished{0};
  // Set (under the pool mutex) when a row's load ran past the loader timeout:
  // the batch was bound again to another slot, and this one only waits for
  // the late load to return before going back to the pool. Its rows are
  // discarded.
  std::atomic<bool> orphaned{false};
  // Per row: 0, or 1 + the load attempt (0: the planned sample, k: its k-th
  // substitute) that ran past the timeout in an earlier slot of this batch.
  // Such a row starts as failed ("timeout"). Written under the pool mutex
  // before the rows can be claimed.
  std::vector<int> timed_out;

  // Errors of this batch (error path only: allocation here is fine).
  std::mutex error_mu;
  std::vector<std::pair<int64_t, SampleError>> errors;  // (row, error)
  // Counted into the loader's statistics when the batch completes, so that
  // rows loaded again after a timeout are not counted twice.
  std::vector<std::string> error_reasons;  // failures of the planned samples
  int64_t failed_substitutes = 0;

  // The delivered batch.
  int64_t rows = 0;
  std::vector<int64_t> delivered_indices;
  std::vector<SlotField> fields;  // used ones first, in order; see Batch
  int num_fields = 0;
  std::optional<SampleError> raise;  // set when the batch must be raised

  std::atomic<int> refs{0};
  int64_t row_capacity = 0;  // rows the fixed fields are sized for

  // Returns the storage of field `name`, (re)sized to `bytes`; keeps its buffer.
  SlotField& FieldFor(std::string_view name);
  void ResetFields();
};

// Adapter so that collate functions add fields to a slot.
class SlotBatchBuilder : public BatchBuilder {
 public:
  explicit SlotBatchBuilder(Slot* slot) : slot_(slot) {}
  Tensor Add(std::string_view name, DType dtype, const Shape& shape) override;

 private:
  Slot* slot_;
};

class SlotPool {
 public:
  explicit SlotPool(int capacity) : capacity_(capacity) {
    slots_.reserve(static_cast<size_t>(capacity));
    free_.reserve(static_cast<size_t>(capacity));
  }

  // Guards the pool, and the engine's scheduling state with it.
  Mutex& mu() RETURN_CAPABILITY(mu_) { return mu_; }

  // Slots for prefetching: max(2, num_workers * prefetch_factor).
  int capacity() const { return capacity_; }
  // Adds room for one more slot, for a caller that holds every slot and
  // asks for more (as list(loader) does): what the caller keeps is beyond
  // the prefetch bound, and refusing would only deadlock.
  void GrowLocked() REQUIRES(mu_) { ++grown_; }
  int grown_locked() const REQUIRES(mu_) { return grown_; }

  // A free slot, or nullptr.
  Slot* TakeFreeLocked() REQUIRES(mu_);
  // True if a slot can be taken now.
  bool HasFreeLocked() const REQUIRES(mu_);
  // Returns a slot to the free list.
  void PutLocked(Slot* slot) REQUIRES(mu_);
  // Called by the last Batch handle of a delivered slot; wakes waiting workers.
  void Release(Slot* slot) EXCLUDES(mu_);
  // Slots that exist now.
  int size_locked() const REQUIRES(mu_) { return static_cast<int>(slots_.size()); }
  // Destroys free slots beyond both the capacity and the batches held plus
  // the capacity, so the memory of batches a caller kept (list(loader)) goes
  // once they are released, while a caller that keeps a few batches does
  // not make the pool allocate a slot per batch. REQUIRES: no one iterating
  // slots_locked().
  void ShrinkLocked() REQUIRES(mu_);
  // Slots currently held by the consumer.
  int delivered_count_locked() const REQUIRES(mu_) { return delivered_; }
  void MarkDeliveredLocked(Slot* slot) REQUIRES(mu_);
  // All slots created so far.
  const std::vector<std::unique_ptr<Slot>>& slots_locked() const REQUIRES(mu_) { return slots_; }

  // Workers waiting for new work or a free slot. WaitForWorkLocked blocks
  // (releasing mu) until woken, possibly spuriously: callers loop on their
  // condition. Waiters are counted so that notifying only when someone
  // waits keeps futex calls off the per-batch path.
  void WaitForWorkLocked() REQUIRES(mu_) {
    ++workers_waiting_;
    work_cv_.Wait(&mu_);
    --workers_waiting_;
  }
  bool workers_waiting_locked() const REQUIRES(mu_) { return workers_waiting_ > 0; }
  void WakeWorkers() { work_cv_.NotifyAll(); }
  void WakeOneWorker() { work_cv_.NotifyOne(); }

 private:
  Mutex mu_;
  CondVar work_cv_;
  int workers_waiting_ GUARDED_BY(mu_) = 0;
  const int capacity_;
  int grown_ GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Slot>> slots_ GUARDED_BY(mu_);
  std::vector<Slot*> free_ GUARDED_BY(mu_);
  int delivered_ GUARDED_BY(mu_) = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_H_
