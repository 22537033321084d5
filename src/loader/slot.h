// Slot and SlotPool: the bounded set of batch buffers a loader owns.
//
// A Slot holds everything one batch needs: one reusable Sample per row, the
// batch tensors' storage (from the pool's SlotAllocator), and bookkeeping for
// the rows in flight. Slots are created only when the pipeline needs one (a
// free slot is reused before another is made), up to the pool's limit, and
// then recycled: in steady state no memory is allocated. A delivered slot is
// referenced by Batch handles; when the last one dies the slot goes back to
// the free list.
//
// The pool is shared (std::shared_ptr) between the engine and the Batch
// handles, so a batch may outlive its loader. Its mutex, mu(), is also the
// scheduler's lock (the Scheduler's state is GUARDED_BY(pool_->mu())): a
// released slot and new work must be seen under one lock by the workers that
// wait for either, so the workers wait on the pool (WaitForWorkLocked) and
// Release wakes them.
#ifndef FEEDLINE_SRC_LOADER_SLOT_H_
#define FEEDLINE_SRC_LOADER_SLOT_H_

#include <atomic>
#include <chrono>
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
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/slot_allocator.h"

namespace feedline::internal {

struct FixedLayout;  // slot_layout.h

// The per-row outcome of loading.
enum class RowStatus : uint8_t { kPending, kOk, kReplaced, kSkipped, kFailed, kCancelled };

// Growable batch storage in blocks of a SlotAllocator, not zeroed when it
// grows. A slot's fields hold whole batches (64 float images are 38 MB);
// zero-filling them would write all of it before the first batch, under the
// scheduler's lock, and then the workers write every byte again. Nothing
// reads batch storage before it is written: workers fill the rows, collate
// the rest, and rows that are not delivered are compacted away.
class SlotStorage {
 public:
  SlotStorage() = default;
  explicit SlotStorage(SlotAllocator* allocator) : allocator_(allocator) {}
  ~SlotStorage();
  SlotStorage(SlotStorage&& other) noexcept;
  SlotStorage& operator=(SlotStorage&& other) noexcept;
  SlotStorage(const SlotStorage&) = delete;
  SlotStorage& operator=(const SlotStorage&) = delete;

  std::byte* data() { return block_.data; }
  const std::byte* data() const { return block_.data; }
  size_t size() const { return size_; }
  // Bytes of the block held (at least size()).
  size_t capacity() const { return block_.bytes; }
  // Makes size() `bytes`, keeping the first min(size(), bytes) bytes; a
  // larger block grows geometrically (as std::vector does), so a field whose
  // batches grow a little at a time is not copied every batch.
  void resize(size_t bytes);

 private:
  SlotAllocator* allocator_ = nullptr;  // the pool's; outlives the slot
  SlotBlock block_;
  size_t size_ = 0;
};

struct SlotField {
  std::string name;
  Tensor tensor;
  SlotStorage storage;
  bool used = false;
  bool fixed = false;  // declared by the dataset and written in place
};

enum class SlotState : uint8_t { kFree, kFilling, kReady, kDelivered };

struct Slot {
  // Identity of the batch being filled or held.
  int64_t epoch = 0;
  int64_t batch_index = 0;
  uint64_t generation = 0;  // which epoch run; stale slots are discarded
  int producer = -1;        // iterable datasets: the worker that filled it (its
                            // batch_index counts that worker's batches)
  SlotState state = SlotState::kFree;

  // When the last row was claimed (Scheduler: the batch's tail starts).
  std::chrono::steady_clock::time_point fully_claimed;

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
  // BatchBuilder::Attach's object; dropped when the slot is filled again
  // (ResetFields, on the filling thread, with no loader lock held: its
  // owner may need another lock to let go of it, a Python object the GIL).
  std::shared_ptr<const void> attachment;

  std::atomic<int> refs{0};
  int64_t row_capacity = 0;  // rows the fixed fields are sized for
  // The fields its rows are bound to (SlotLayout::EnsureRows); null before.
  std::shared_ptr<const FixedLayout> layout;
  // Where the fields' storage comes from (the pool's allocator).
  SlotAllocator* allocator = nullptr;

  // Field `name` of this batch, as the next used field; keeps the storage it had
  // in earlier batches (the caller sizes it). A name added twice is a SampleError.
  SlotField& FieldFor(std::string_view name);
  // Appends a field whose storage comes from `allocator`.
  SlotField& AddField(std::string name);
  void ResetFields();
  // Bytes of batch storage this slot holds.
  size_t storage_bytes() const;
};

// Adapter so that collate functions add fields to a slot.
class SlotBatchBuilder : public BatchBuilder {
 public:
  explicit SlotBatchBuilder(Slot* slot) : slot_(slot) {}
  Tensor Add(std::string_view name, DType dtype, const Shape& shape) override;
  void Attach(std::shared_ptr<const void> object) override { slot_->attachment = std::move(object); }

 private:
  Slot* slot_;
};

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
  // provides the batch storage and is kept as long as any slot lives.
  SlotPool(int limit, std::shared_ptr<SlotAllocator> allocator);

  // Guards the pool, and the scheduler's state with it.
  Mutex& mu() RETURN_CAPABILITY(mu_) { return mu_; }
  SlotAllocator& allocator() { return *allocator_; }

  // The most slots in use (filling, ready or held by the consumer) at once;
  // starts at max(2, num_workers * prefetch_factor) and may be changed
  // while loading (SetLimitLocked).
  int limit_locked() const REQUIRES(mu_) { return limit_; }
  // Changes the limit (at least 1). Slots in use beyond a lowered limit stay
  // until they come back; free ones beyond it are destroyed.
  void SetLimitLocked(int limit) REQUIRES(mu_);
  // Adds room for one more slot, for a caller that holds every slot and
  // asks for more (as list(loader) does): what the caller keeps is beyond
  // the prefetch bound, and refusing would only deadlock.
  void GrowLocked() REQUIRES(mu_) { ++grown_; }
  int grown_locked() const REQUIRES(mu_) { return grown_; }

  // A slot to bind a batch to, or nullptr if limit + grown slots are in
  // use. A free slot is reused before another is created.
  Slot* TakeFreeLocked() REQUIRES(mu_);
  // True if a slot can be taken now.
  bool HasFreeLocked() const REQUIRES(mu_);
  // How many slots can be taken now.
  int FreeCountLocked() const REQUIRES(mu_) { return limit_ + grown_ - in_use_locked(); }
  // Returns a slot to the free list.
  void PutLocked(Slot* slot) REQUIRES(mu_);
  // Called by the last Batch handle of a delivered slot; wakes waiting workers.
  void Release(Slot* slot) EXCLUDES(mu_);
  // With n > 0, a released slot is destroyed (its memory given back) while
  // more than n slots exist, and more than the batches the consumer still
  // holds plus one; 0: released slots are kept for reuse.
  void set_keep_on_release_locked(int n) REQUIRES(mu_) { keep_on_release_ = n; }
  // Slots that exist now, and those of them in use (not free).
  int size_locked() const REQUIRES(mu_) { return static_cast<int>(slots_.size()); }
  int in_use_locked() const REQUIRES(mu_) {
    return static_cast<int>(slots_.size() - free_.size());
  }
  // Destroys free slots beyond both the limit and the batches held plus
  // the limit, so the memory of batches a caller kept (list(loader)) goes
  // once they are released, while a caller that keeps a few batches does
  // not make the pool allocate a slot per batch. REQUIRES: no one iterating
  // slots_locked().
  void ShrinkLocked() REQUIRES(mu_);
  // Slots currently held by the consumer.
  int delivered_count_locked() const REQUIRES(mu_) { return delivered_; }
  void MarkDeliveredLocked(Slot* slot) REQUIRES(mu_);
  // All slots created so far.
  const std::vector<std::unique_ptr<Slot>>& slots_locked() const REQUIRES(mu_) { return slots_; }
  // The batch storage of the largest slot: what one more slot would cost.
  int64_t largest_slot_bytes_locked() const REQUIRES(mu_);
  SlotUsage UsageLocked() const REQUIRES(mu_);

  // Workers waiting for new work or a free slot. WaitForWorkLocked blocks
  // (releasing mu) until woken, possibly spuriously: callers loop on their
  // condition. Waiters are counted so that notifying only when someone
  // waits keeps futex calls off the per-batch path.
  void WaitForWorkLocked() REQUIRES(mu_) {
    ++workers_waiting_;
    work_cv_.Wait(&mu_);
    --workers_waiting_;
  }
  // Map-style workers wait each on their own condition variable
  // (SetWorkerCount, before any worker starts), so that WakeOneWorker can
  // choose whom to wake: the lowest-numbered waiting worker. With cheap
  // batches one worker then does the loading and stays on its core; a
  // single shared condition variable woke the waiters in turn (oldest
  // first), and the one woken each time was placed beside the consumer,
  // preempting it, while the other core idled (perf sched).
  void SetWorkerCount(int n);
  // With `until`, at most until then.
  void WaitForWorkLocked(int worker,
                         std::optional<std::chrono::steady_clock::time_point> until = std::nullopt)
      REQUIRES(mu_) {
    const size_t w = static_cast<size_t>(worker);
    ++workers_waiting_;
    // A count, not a flag: a worker replaced after a timeout shares its id
    // with the thread it replaced.
    worker_waits_[w].fetch_add(1, std::memory_order_relaxed);
    if (until) {
      worker_cvs_[w]->WaitUntil(&mu_, *until);
    } else {
      worker_cvs_[w]->Wait(&mu_);
    }
    worker_waits_[w].fetch_sub(1, std::memory_order_relaxed);
    --workers_waiting_;
  }
  bool workers_waiting_locked() const REQUIRES(mu_) { return workers_waiting_ > 0; }
  void WakeWorkers();
  // Wakes the lowest-numbered waiting worker (or one waiter of the shared
  // condition variable). Without the lock: a worker marks itself waiting
  // under it, so one that waits for a change made under it before this call
  // is seen.
  void WakeOneWorker();
  // Whether a released slot wakes one waiting worker or all of them. One is
  // enough when the waiters are interchangeable (map-style workers, none
  // parked: the one woken wakes another if it leaves work behind); waking
  // all of them for one slot had every waiter but one wake up, find nothing
  // and sleep again, once per batch.
  void set_wake_one_on_release(bool one) {
    wake_one_on_release_.store(one, std::memory_order_relaxed);
  }
  // With `batch` set, a released slot wakes a waiting worker only once half
  // the limit is free, so that a worker woken fills several batches per
  // wake-up. Meant for batches that take microseconds to load, where the
  // wake-up and the context switch, once per batch, cost more than the
  // loading; whoever is about to wait for a batch must then wake the workers
  // itself (Scheduler::WaitForProgressLocked does).
  void set_batch_release_wakes(bool batch) {
    batch_release_wakes_.store(batch, std::memory_order_relaxed);
  }
  bool batch_release_wakes() const { return batch_release_wakes_.load(std::memory_order_relaxed); }

 private:
  Mutex mu_;
  CondVar work_cv_;
  std::vector<std::unique_ptr<CondVar>> worker_cvs_;
  std::unique_ptr<std::atomic<int>[]> worker_waits_;
  int workers_waiting_ GUARDED_BY(mu_) = 0;
  std::atomic<bool> wake_one_on_release_{false};
  std::atomic<bool> batch_release_wakes_{false};
  // Declared before slots_: destroyed after them, since their storage
  // returns to it.
  const std::shared_ptr<SlotAllocator> allocator_;
  int limit_ GUARDED_BY(mu_);
  int grown_ GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Slot>> slots_ GUARDED_BY(mu_);
  std::vector<Slot*> free_ GUARDED_BY(mu_);
  int delivered_ GUARDED_BY(mu_) = 0;
  int keep_on_release_ GUARDED_BY(mu_) = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_H_
