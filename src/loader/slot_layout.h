// SlotLayout: how the rows of a map-style batch are laid out in a slot.
//
// Fields written in place have each row's Sample bound to the row's place in
// the slot's batch storage, so a worker's write is the batch. They are
// either declared (Dataset::FixedFields, when no custom collate function
// owns the layout) or learned: a dataset that declares none (a Python
// dataset, whose layout only its samples tell) has the fields its first
// collated batch stacked (same dtype and shape in every row, not ragged or
// padded) bound from then on, in sample order, the longest such prefix.
//
// A declared field is a promise: a sample that breaks it fails ("schema").
// A learned one is a guess: a row whose field differs (another shape, a
// missing field) is written to the Sample's own storage, the batch is
// collated the way it was before anything was learned (padding, or the
// collate error naming the field and both shapes), and learning stops for
// good, so a dataset of varying shapes pays that extra copy once.
//
// EnsureRows sizes a slot for a batch of n rows and binds its rows to the
// current layout; a slot keeps the layout it was bound with (Slot::layout),
// so slots bound before the layout was learned keep working as they were.
//
// Thread safety: EnsureRows is called under the pool mutex; Learn and Forget
// from any worker; the current layout is swapped under an internal mutex.
#ifndef FEEDLINE_SRC_LOADER_SLOT_LAYOUT_H_
#define FEEDLINE_SRC_LOADER_SLOT_LAYOUT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "feedline/collate.h"
#include "feedline/dataset.h"
#include "feedline/sample.h"
#include "src/loader/slot.h"

namespace feedline::internal {

// The fields written in place, in slot field order, and one row's bytes of each.
struct FixedLayout {
  std::vector<FieldSpec> fields;
  std::vector<size_t> row_bytes;
  bool learned = false;  // true: soft bindings (see above)
};

class SlotLayout {
 public:
  SlotLayout();
  // `fixed`: the declared fields; none lets the layout be learned.
  explicit SlotLayout(std::vector<FieldSpec> fixed);
  // Engine assembly only (no concurrent use).
  SlotLayout& operator=(SlotLayout&& other) noexcept;

  // The layout slots are bound with from now on (never null).
  std::shared_ptr<const FixedLayout> current() const;

  // Makes `slot` hold at least `rows` rows: per-row bookkeeping and, for
  // fixed fields, batch storage with each row's Sample bound into it (again,
  // if the layout changed since the slot was bound). Throws std::bad_alloc
  // (the slot stays usable).
  void EnsureRows(Slot* slot, int64_t rows) const;

  // True until a layout was learned or learning stopped.
  bool learning() const { return learning_.load(std::memory_order_acquire); }
  // Learns the layout from the samples of a batch collated by DefaultCollate
  // with `options` (the first call wins; later ones do nothing).
  void Learn(std::span<const Sample* const> samples, const CollateOptions& options);
  // Stops writing learned fields in place (a row did not fit them).
  void Forget();

 private:
  static std::shared_ptr<const FixedLayout> Make(std::vector<FieldSpec> fields, bool learned);

  mutable std::mutex mu_;
  std::shared_ptr<const FixedLayout> current_;  // GUARDED_BY(mu_)
  std::atomic<bool> learning_{false};
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_LAYOUT_H_
