#include "src/process/process_load_backend.h"

#include <utility>

namespace feedline::internal {

ProcessLoadBackend::ProcessLoadBackend(std::shared_ptr<ProcessWorkers> workers,
                                       int64_t dataset_size)
    : workers_(std::move(workers)), dataset_size_(dataset_size) {}

LoadBackendTraits ProcessLoadBackend::traits() const {
  LoadBackendTraits traits;
  traits.shared_slots = workers_->slot_allocator() != nullptr;
  traits.round_trip_rows = true;
  traits.costly_workers = true;
  return traits;
}

std::shared_ptr<SlotAllocator> ProcessLoadBackend::slot_allocator() const {
  if (auto shared = workers_->slot_allocator()) return shared;
  return std::make_shared<HeapSlotAllocator>();  // without shared memory
}

bool ProcessLoadBackend::LoadRows(std::span<RowLoad> rows, int64_t epoch,
                                  SampleContext& ctx) const {
  for (const RowLoad& row : rows) {
    if (row.index < 0 || row.index >= dataset_size_) return false;
  }
  return workers_->LoadRows(rows, epoch, ctx);
}

}  // namespace feedline::internal
