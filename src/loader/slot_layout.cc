#include "src/loader/slot_layout.h"

#include <utility>

#include "src/core/sample_binder.h"

namespace feedline::internal {

SlotLayout::SlotLayout(std::vector<FieldSpec> fixed) : fixed_(std::move(fixed)) {
  for (const FieldSpec& spec : fixed_) {
    row_bytes_.push_back(static_cast<size_t>(spec.shape.elements()) * DTypeSize(spec.dtype));
  }
}

void SlotLayout::EnsureRows(Slot* slot, int64_t rows) const {
  const size_t n = static_cast<size_t>(rows);
  if (slot->samples.size() < n) slot->samples.resize(n);
  if (slot->indices.size() < n) slot->indices.resize(n);
  if (slot->status.size() < n) slot->status.resize(n);
  if (slot->delivered_indices.size() < n) slot->delivered_indices.resize(n);
  if (slot->timed_out.size() < n) slot->timed_out.resize(n);
  if (fixed_.empty() || rows <= slot->row_capacity) return;
  // Fixed fields occupy the first positions of the slot's field list, sized
  // for the largest batch seen; every row's Sample writes straight into them.
  if (slot->fields.size() < fixed_.size()) {
    while (slot->fields.size() < fixed_.size()) slot->AddField(std::string());
    for (size_t k = 0; k < fixed_.size(); ++k) slot->fields[k].name = fixed_[k].name;
  }
  for (size_t k = 0; k < fixed_.size(); ++k) {
    slot->fields[k].storage.resize(n * row_bytes_[k]);
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t k = 0; k < fixed_.size(); ++k) {
      SampleBinder::Bind(slot->samples[r], fixed_[k].name, fixed_[k].dtype, fixed_[k].shape,
                         slot->fields[k].storage.data() + r * row_bytes_[k]);
    }
  }
  slot->row_capacity = rows;
}

}  // namespace feedline::internal
