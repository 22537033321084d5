// Batch: a handle on one delivered batch, whose tensors live in a slot of the
// loader's bounded pool.
//
// Copying a Batch is cheap (a reference count). The slot goes back to the pool
// when the last handle dies, and only then can the loader reuse its memory, so
// holding batches is what bounds prefetching. A Batch may outlive its loader.
//
// Fields: every sample field, stacked into [B, ...]; variable-length fields
// padded (plus "<name>_lengths") or ragged (values concatenated plus
// "<name>_offsets", B + 1 entries); with error_policy replace a "replaced" bool
// [B] mask.
//
// Thread safety: const methods may be called from any thread.
//
// Example:
//   for (const Batch& batch : loader) {
//     const Tensor& x = batch["image"];
//     Train(x.data<float>(), batch["label"].data<int64_t>(), batch.size());
//   }
#ifndef FEEDLINE_BATCH_H_
#define FEEDLINE_BATCH_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "feedline/export.h"
#include "feedline/tensor.h"

namespace feedline {

namespace internal {
class BatchAccess;
struct Slot;
class SlotPool;
}  // namespace internal

class FEEDLINE_EXPORT Batch {
 public:
  Batch() = default;  // an empty handle

  explicit operator bool() const { return slot_ != nullptr; }
  // Number of samples.
  int64_t size() const;
  // Position of this batch in its epoch, and the epoch.
  int64_t index() const;
  int64_t epoch() const;
  // The dataset index of each row (for a replaced row: the substitute's).
  std::span<const int64_t> indices() const;

  int num_fields() const;
  const std::string& field_name(int i) const;
  const Tensor& field(int i) const;
  // The field `name`, or nullptr.
  const Tensor* Find(std::string_view name) const;
  // The field `name`; throws Error if absent.
  const Tensor& operator[](std::string_view name) const;
  // What the collate function attached (BatchBuilder::Attach), or null.
  std::shared_ptr<const void> attachment() const;

  Batch(const Batch& other);
  Batch& operator=(const Batch& other);
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  ~Batch();

 private:
  // Only the loader makes non-empty batches (src/loader/batch_access.h).
  friend class internal::BatchAccess;
  // A handle on `slot`, which returns to `pool` when the last handle dies.
  FEEDLINE_NO_EXPORT Batch(std::shared_ptr<internal::SlotPool> pool, internal::Slot* slot);
  void Release();

  std::shared_ptr<internal::SlotPool> pool_;
  internal::Slot* slot_ = nullptr;
};

}  // namespace feedline

#endif  // FEEDLINE_BATCH_H_
