#include "src/loader/slot.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace feedline::internal {

SlotStorage::~SlotStorage() {
  if (allocator_ != nullptr) allocator_->Free(block_);
}

SlotStorage::SlotStorage(SlotStorage&& other) noexcept
    : allocator_(other.allocator_), block_(other.block_), size_(other.size_) {
  other.block_ = SlotBlock{};
  other.size_ = 0;
}

SlotStorage& SlotStorage::operator=(SlotStorage&& other) noexcept {
  if (this != &other) {
    if (allocator_ != nullptr) allocator_->Free(block_);
    allocator_ = other.allocator_;
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
  allocator_->Free(block_);
  block_ = grown;
  size_ = bytes;
}

SlotField& Slot::AddField(std::string name) {
  fields.emplace_back();
  fields.back().name = std::move(name);
  fields.back().storage = SlotStorage(allocator);
  return fields.back();
}

size_t Slot::storage_bytes() const {
  size_t bytes = 0;
  for (const SlotField& f : fields) bytes += f.storage.capacity();
  return bytes;
}

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

SlotPool::SlotPool(int limit, std::shared_ptr<SlotAllocator> allocator)
    : allocator_(std::move(allocator)), limit_(std::max(1, limit)) {
  slots_.reserve(static_cast<size_t>(limit_));
  free_.reserve(static_cast<size_t>(limit_));
}

void SlotPool::SetLimitLocked(int limit) {
  limit_ = std::max(1, limit);
  ShrinkLocked();
}

Slot* SlotPool::TakeFreeLocked() {
  if (!HasFreeLocked()) return nullptr;
  // Reuse before growing: a slot is created only when every existing one is
  // in use, so a pipeline that needs two slots never pays for (or first
  // touches) more, whatever the limit allows.
  if (!free_.empty()) {
    Slot* s = free_.back();
    free_.pop_back();
    return s;
  }
  slots_.push_back(std::make_unique<Slot>());
  slots_.back()->allocator = allocator_.get();
  free_.reserve(slots_.size());
  return slots_.back().get();
}

bool SlotPool::HasFreeLocked() const { return in_use_locked() < limit_ + grown_; }

void SlotPool::PutLocked(Slot* slot) {
  if (slot->state == SlotState::kDelivered) --delivered_;
  slot->state = SlotState::kFree;
  free_.push_back(slot);
}

void SlotPool::ShrinkLocked() {
  const size_t keep = static_cast<size_t>(limit_) + static_cast<size_t>(delivered_);
  int destroyed = 0;
  while (slots_.size() > static_cast<size_t>(limit_) && slots_.size() > keep &&
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

int64_t SlotPool::largest_slot_bytes_locked() const {
  size_t largest = 0;
  for (const auto& slot : slots_) largest = std::max(largest, slot->storage_bytes());
  return static_cast<int64_t>(largest);
}

SlotUsage SlotPool::UsageLocked() const {
  SlotUsage usage;
  usage.limit = limit_;
  usage.created = static_cast<int>(slots_.size());
  usage.in_use = in_use_locked();
  usage.bytes = allocator_->bytes_in_use();
  usage.largest_slot_bytes = largest_slot_bytes_locked();
  return usage;
}

void SlotPool::MarkDeliveredLocked(Slot* slot) {
  slot->state = SlotState::kDelivered;
  ++delivered_;
}

void SlotPool::Release(Slot* slot) {
  bool wake = false;
  std::unique_ptr<Slot> given_back;  // destroyed after the lock is dropped
  {
    MutexLock lock(&mu_);
    PutLocked(slot);
    // Never below what the consumer still holds plus one to fill: a loop
    // that keeps its previous batch must not destroy and make a slot per batch.
    const size_t keep = static_cast<size_t>(std::max(keep_on_release_, delivered_ + 1));
    if (keep_on_release_ > 0 && slots_.size() > keep) {
      free_.pop_back();  // `slot`, just put there
      auto it = std::find_if(slots_.begin(), slots_.end(),
                             [slot](const std::unique_ptr<Slot>& s) { return s.get() == slot; });
      given_back = std::move(*it);
      slots_.erase(it);
      grown_ = std::max(0, grown_ - 1);
    }
    ShrinkLocked();
    wake = workers_waiting_ > 0 &&
           (!batch_release_wakes() || FreeCountLocked() >= std::max(1, limit_ / 2));
  }
  if (!wake) return;
  if (wake_one_on_release_.load(std::memory_order_relaxed)) {
    WakeOneWorker();
  } else {
    WakeWorkers();
  }
}

void SlotPool::SetWorkerCount(int n) {
  worker_cvs_.clear();
  for (int w = 0; w < n; ++w) worker_cvs_.push_back(std::make_unique<CondVar>());
  worker_waits_ = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(n));
}

void SlotPool::WakeWorkers() {
  work_cv_.NotifyAll();
  for (const auto& cv : worker_cvs_) cv->NotifyAll();
}

void SlotPool::WakeOneWorker() {
  for (size_t w = 0; w < worker_cvs_.size(); ++w) {
    if (worker_waits_[w].load(std::memory_order_relaxed) > 0) {
      worker_cvs_[w]->NotifyOne();
      return;
    }
  }
  work_cv_.NotifyOne();
}

}  // namespace feedline::internal
