#include "feedline/batch.h"

#include <utility>

#include "feedline/error.h"
#include "src/loader/slot.h"
#include "src/loader/slot_pool.h"

namespace feedline {

using internal::Slot;

Batch::Batch(std::shared_ptr<internal::SlotPool> pool, Slot* slot)
    : pool_(std::move(pool)), slot_(slot) {
  slot_->refs.fetch_add(1, std::memory_order_relaxed);
}

Batch::Batch(const Batch& other) : pool_(other.pool_), slot_(other.slot_) {
  if (slot_ != nullptr) slot_->refs.fetch_add(1, std::memory_order_relaxed);
}

Batch& Batch::operator=(const Batch& other) {
  if (this != &other) {
    Batch copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Batch::Batch(Batch&& other) noexcept : pool_(std::move(other.pool_)), slot_(other.slot_) {
  other.slot_ = nullptr;
}

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::move(other.pool_);
    slot_ = other.slot_;
    other.slot_ = nullptr;
  }
  return *this;
}

Batch::~Batch() { Release(); }

void Batch::Release() {
  if (slot_ == nullptr) return;
  // acq_rel: the last holder must see every read of the others finished
  // before the slot is reused.
  if (slot_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) pool_->Release(slot_);
  slot_ = nullptr;
  pool_.reset();
}

std::shared_ptr<const void> Batch::attachment() const {
  return slot_ ? slot_->attachment : nullptr;
}

int64_t Batch::size() const { return slot_ ? slot_->rows : 0; }
int64_t Batch::index() const { return slot_ ? slot_->batch_index : -1; }
int64_t Batch::epoch() const { return slot_ ? slot_->epoch : -1; }

std::span<const int64_t> Batch::indices() const {
  if (!slot_) return {};
  return std::span<const int64_t>(slot_->delivered_indices.data(),
                                  static_cast<size_t>(slot_->rows));
}

int Batch::num_fields() const { return slot_ ? slot_->num_fields : 0; }

const std::string& Batch::field_name(int i) const {
  return slot_->fields[static_cast<size_t>(i)].name;
}

const Tensor& Batch::field(int i) const { return slot_->fields[static_cast<size_t>(i)].tensor; }

const Tensor* Batch::Find(std::string_view name) const {
  if (!slot_) return nullptr;
  for (int i = 0; i < slot_->num_fields; ++i) {
    if (slot_->fields[static_cast<size_t>(i)].name == name) {
      return &slot_->fields[static_cast<size_t>(i)].tensor;
    }
  }
  return nullptr;
}

const Tensor& Batch::operator[](std::string_view name) const {
  const Tensor* t = Find(name);
  if (t == nullptr) {
    std::string known;
    for (int i = 0; i < num_fields(); ++i) known += (i ? ", " : "") + field_name(i);
    throw Error("batch has no field '" + std::string(name) + "' (fields: " + known + ")");
  }
  return *t;
}

}  // namespace feedline
