// SlotLayout: how the rows of a map-style batch are laid out in a slot.
//
// Fields the dataset declares (Dataset::FixedFields, when no custom collate
// function owns the layout) are written in place: each row's Sample is bound
// to its place in the slot's batch storage, so a worker's write is the
// batch. EnsureRows sizes a slot for a batch of n rows and makes those
// bindings.
#ifndef FEEDLINE_SRC_LOADER_SLOT_LAYOUT_H_
#define FEEDLINE_SRC_LOADER_SLOT_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "feedline/dataset.h"
#include "src/loader/slot.h"

namespace feedline::internal {

class SlotLayout {
 public:
  SlotLayout() = default;
  explicit SlotLayout(std::vector<FieldSpec> fixed);

  // The fields written in place, in slot field order, and one row's bytes of each.
  const std::vector<FieldSpec>& fixed() const { return fixed_; }
  const std::vector<size_t>& row_bytes() const { return row_bytes_; }

  // Makes `slot` hold at least `rows` rows: per-row bookkeeping and, for
  // fixed fields, batch storage with each row's Sample bound into it.
  // Throws std::bad_alloc (the slot stays usable).
  void EnsureRows(Slot* slot, int64_t rows) const;

 private:
  std::vector<FieldSpec> fixed_;
  std::vector<size_t> row_bytes_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_LAYOUT_H_
