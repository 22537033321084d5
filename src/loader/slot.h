// Slot: one batch buffer of a loader's bounded set (SlotPool, slot_pool.h).
//
// A Slot holds everything one batch needs: one reusable Sample per row, the
// batch tensors' storage (from the pool's SlotAllocator), and bookkeeping for
// the rows in flight. Slots are created only when the pipeline needs one (a
// free slot is reused before another is made), up to the pool's limit, and
// then recycled: in steady state no memory is allocated. A delivered slot is
// referenced by Batch handles; when the last one dies the slot goes back to
// the free list.
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
  // `held`, if given, counts the bytes of the blocks this storage holds
  // (its slot's storage_bytes(), read by other threads for statistics).
  explicit SlotStorage(SlotAllocator* allocator, std::atomic<size_t>* held = nullptr)
      : allocator_(allocator), held_(held) {}
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
  std::atomic<size_t>* held_ = nullptr;  // the slot's; outlives this storage
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
  // The rows' indices as the sampler planned them, never replaced: what
  // each row's SampleContext::batch shows.
  std::vector<int64_t> planned_indices;
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
  // The bytes of the fields' blocks, kept by their storage as it grows, so
  // that statistics read it while a worker adds fields and grows them.
  std::atomic<size_t> storage_bytes_held{0};

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

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_H_
