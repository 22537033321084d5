#include "src/loader/slot_layout.h"

#include <algorithm>
#include <string>
#include <utility>

#include "src/core/sample_binder.h"

namespace feedline::internal {
namespace {

bool Listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::shared_ptr<const FixedLayout> SlotLayout::Make(std::vector<FieldSpec> fields, bool learned) {
  auto layout = std::make_shared<FixedLayout>();
  for (const FieldSpec& spec : fields) {
    layout->row_bytes.push_back(static_cast<size_t>(spec.shape.elements()) *
                                DTypeSize(spec.dtype));
  }
  layout->fields = std::move(fields);
  layout->learned = learned;
  return layout;
}

SlotLayout::SlotLayout() : current_(Make({}, false)) {}

SlotLayout::SlotLayout(std::vector<FieldSpec> fixed) {
  learning_.store(fixed.empty(), std::memory_order_release);
  current_ = Make(std::move(fixed), false);
}

SlotLayout& SlotLayout::operator=(SlotLayout&& other) noexcept {
  if (this != &other) {
    current_ = std::move(other.current_);
    learning_.store(other.learning_.load());
    other.current_ = Make({}, false);
  }
  return *this;
}

std::shared_ptr<const FixedLayout> SlotLayout::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

void SlotLayout::EnsureRows(Slot* slot, int64_t rows) const {
  const size_t n = static_cast<size_t>(rows);
  if (slot->samples.size() < n) slot->samples.resize(n);
  if (slot->indices.size() < n) slot->indices.resize(n);
  if (slot->status.size() < n) slot->status.resize(n);
  if (slot->delivered_indices.size() < n) slot->delivered_indices.resize(n);
  if (slot->timed_out.size() < n) slot->timed_out.resize(n);
  std::shared_ptr<const FixedLayout> layout = current();
  if (slot->layout != layout) {
    // Bound with an older layout (or never): drop its bindings, all rows.
    for (Sample& sample : slot->samples) SampleBinder::Unbind(sample);
    slot->layout = layout;
    slot->row_capacity = 0;
  }
  const std::vector<FieldSpec>& fixed = layout->fields;
  if (fixed.empty() || rows <= slot->row_capacity) return;
  // Fixed fields occupy the first positions of the slot's field list, sized
  // for the largest batch seen; every row's Sample writes straight into them.
  // A slot that collated batches before keeps those fields' storage, moved
  // to the front.
  for (size_t k = 0; k < fixed.size(); ++k) {
    size_t found = k;
    while (found < slot->fields.size() && slot->fields[found].name != fixed[k].name) ++found;
    if (found == slot->fields.size()) slot->AddField(fixed[k].name);
    if (found != k) std::swap(slot->fields[found], slot->fields[k]);
  }
  for (size_t k = 0; k < fixed.size(); ++k) {
    slot->fields[k].storage.resize(n * layout->row_bytes[k]);
  }
  const size_t all_rows = slot->samples.size();
  for (size_t r = 0; r < all_rows; ++r) {
    // Rows beyond n are bound only once the storage holds them.
    if (r >= n) {
      SampleBinder::Unbind(slot->samples[r]);
      continue;
    }
    for (size_t k = 0; k < fixed.size(); ++k) {
      SampleBinder::Bind(slot->samples[r], fixed[k].name, fixed[k].dtype, fixed[k].shape,
                         slot->fields[k].storage.data() + r * layout->row_bytes[k],
                         layout->learned);
    }
  }
  slot->row_capacity = rows;
}

void SlotLayout::Learn(std::span<const Sample* const> samples, const CollateOptions& options) {
  if (!learning() || samples.empty()) return;
  std::vector<FieldSpec> fields;
  const Sample& first = *samples[0];
  for (int f = 0; f < first.num_fields(); ++f) {
    const std::string& name = first.field_name(f);
    const Tensor& head = first.field(f);
    if (SampleBinder::IsBound(first, f) || Listed(options.ragged, name) || Listed(options.padded, name) ||
        head.shape().elements() == 0) {
      break;
    }
    bool stacked = true;
    for (const Sample* s : samples) {
      const Tensor* t = s->Find(name);
      if (t == nullptr || t->dtype() != head.dtype() || t->shape() != head.shape()) {
        stacked = false;
        break;
      }
    }
    // A prefix only: the batch's fields keep the order they had.
    if (!stacked) break;
    fields.push_back(FieldSpec{name, head.dtype(), head.shape()});
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!learning_.load(std::memory_order_acquire)) return;
  learning_.store(false, std::memory_order_release);
  if (!fields.empty()) current_ = Make(std::move(fields), true);
}

void SlotLayout::Forget() {
  std::lock_guard<std::mutex> lock(mu_);
  learning_.store(false, std::memory_order_release);
  if (current_->learned) current_ = Make({}, false);
}

}  // namespace feedline::internal
