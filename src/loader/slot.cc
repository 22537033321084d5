#include "src/loader/slot.h"

#include <algorithm>

namespace feedline::internal {

SlotField& Slot::FieldFor(std::string_view name) {
  for (int i = 0; i < num_fields; ++i) {
    if (fields[static_cast<size_t>(i)].name == name) {
      throw SampleError("collate", "", "field '" + std::string(name) + "' added twice to a batch");
    }
  }
  // Reuse the field that had this name last time (the common case: same
  // fields every batch), moving it to the next position; else add one.
  const size_t next = static_cast<size_t>(num_fields);
  size_t found = next;
  while (found < fields.size() && fields[found].name != name) ++found;
  if (found == fields.size()) {
    fields.emplace_back();
    fields.back().name = std::string(name);
  }
  if (found != next) std::swap(fields[found], fields[next]);
  SlotField& f = fields[next];
  f.used = true;
  ++num_fields;
  return f;
}

void Slot::ResetFields() {
  for (SlotField& f : fields) f.used = false;
  num_fields = 0;
}

Tensor SlotBatchBuilder::Add(std::string_view name, DType dtype, const Shape& shape) {
  SlotField& f = slot_->FieldFor(name);
  const size_t bytes = static_cast<size_t>(shape.elements()) * DTypeSize(dtype);
  if (f.storage.size() < bytes) f.storage.resize(bytes);
  f.fixed = false;
  f.tensor = Tensor(dtype, shape, f.storage.data());
  return f.tensor;
}

Slot* SlotPool::TakeFreeLocked() {
  // Every slot is created before any is reused, so all warm-up allocation
  // happens in the first `capacity` batches, never later in a run.
  if (static_cast<int>(slots_.size()) < capacity_ + grown_) {
    slots_.push_back(std::make_unique<Slot>());
    free_.reserve(slots_.size());
    return slots_.back().get();
  }
  if (!free_.empty()) {
    Slot* s = free_.back();
    free_.pop_back();
    return s;
  }
  return nullptr;
}

bool SlotPool::HasFreeLocked() const {
  return !free_.empty() || static_cast<int>(slots_.size()) < capacity_ + grown_;
}

void SlotPool::PutLocked(Slot* slot) {
  if (slot->state == SlotState::kDelivered) --delivered_;
  slot->state = SlotState::kFree;
  free_.push_back(slot);
}

void SlotPool::ShrinkLocked() {
  const size_t keep = static_cast<size_t>(capacity_) + static_cast<size_t>(delivered_);
  int destroyed = 0;
  while (slots_.size() > static_cast<size_t>(capacity_) && slots_.size() > keep &&
         !free_.empty()) {
    Slot* victim = free_.back();
    free_.pop_back();
    auto it = std::find_if(slots_.begin(), slots_.end(),
                           [victim](const std::unique_ptr<Slot>& s) { return s.get() == victim; });
    slots_.erase(it);
    ++destroyed;
  }
  grown_ = std::max(0, grown_ - destroyed);
}

void SlotPool::MarkDeliveredLocked(Slot* slot) {
  slot->state = SlotState::kDelivered;
  ++delivered_;
}

void SlotPool::Release(Slot* slot) {
  bool wake = false;
  {
    MutexLock lock(&mu_);
    PutLocked(slot);
    ShrinkLocked();
    wake = workers_waiting_ > 0;
  }
  if (wake) work_cv_.NotifyAll();
}

}  // namespace feedline::internal
