#include "src/loader/slot.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace feedline::internal {

SlotStorage::~SlotStorage() {
  if (held_ != nullptr) held_->fetch_sub(block_.bytes, std::memory_order_relaxed);
  if (allocator_ != nullptr) allocator_->Free(block_);
}

SlotStorage::SlotStorage(SlotStorage&& other) noexcept
    : allocator_(other.allocator_), held_(other.held_), block_(other.block_), size_(other.size_) {
  other.block_ = SlotBlock{};
  other.size_ = 0;
}

SlotStorage& SlotStorage::operator=(SlotStorage&& other) noexcept {
  if (this != &other) {
    if (held_ != nullptr) held_->fetch_sub(block_.bytes, std::memory_order_relaxed);
    if (allocator_ != nullptr) allocator_->Free(block_);
    allocator_ = other.allocator_;
    held_ = other.held_;
    block_ = other.block_;
    size_ = other.size_;
    other.block_ = SlotBlock{};
    other.size_ = 0;
  }
  return *this;
}

void SlotStorage::resize(size_t bytes) {
  if (bytes <= block_.bytes) {
    size_ = bytes;
    return;
  }
  if (allocator_ == nullptr) throw std::logic_error("slot storage has no allocator");
  SlotBlock grown = allocator_->Allocate(std::max(bytes, 2 * size_));
  if (size_ > 0) std::memcpy(grown.data, block_.data, size_);
  if (held_ != nullptr) {
    held_->fetch_add(grown.bytes, std::memory_order_relaxed);
    held_->fetch_sub(block_.bytes, std::memory_order_relaxed);
  }
  allocator_->Free(block_);
  block_ = grown;
  size_ = bytes;
}

SlotField& Slot::AddField(std::string name) {
  fields.emplace_back();
  fields.back().name = std::move(name);
  fields.back().storage = SlotStorage(allocator, &storage_bytes_held);
  return fields.back();
}

size_t Slot::storage_bytes() const {
  return storage_bytes_held.load(std::memory_order_relaxed);
}

SlotField& Slot::FieldFor(std::string_view name) {
  for (int i = 0; i < num_fields; ++i) {
    if (fields[static_cast<size_t>(i)].name == name) {
      throw SampleError(FailureKind::kCollate, "", "field '" + std::string(name) + "' added twice to a batch");
    }
  }
  // Reuse the field that had this name last time (the common case: same
  // fields every batch), moving it to the next position; else add one.
  const size_t next = static_cast<size_t>(num_fields);
  size_t found = next;
  while (found < fields.size() && fields[found].name != name) ++found;
  if (found == fields.size()) AddField(std::string(name));
  if (found != next) std::swap(fields[found], fields[next]);
  SlotField& f = fields[next];
  f.used = true;
  ++num_fields;
  return f;
}

void Slot::ResetFields() {
  for (SlotField& f : fields) f.used = false;
  num_fields = 0;
  attachment.reset();
}

Tensor SlotBatchBuilder::Add(std::string_view name, DType dtype, const Shape& shape) {
  SlotField& f = slot_->FieldFor(name);
  const size_t bytes = static_cast<size_t>(shape.elements()) * DTypeSize(dtype);
  if (f.storage.size() < bytes) f.storage.resize(bytes);
  f.fixed = false;
  f.tensor = Tensor(dtype, shape, f.storage.data());
  return f.tensor;
}

}  // namespace feedline::internal
