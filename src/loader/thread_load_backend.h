// ThreadLoadBackend: samples load on the engine's own worker threads (or the
// caller's), each row by a call of Dataset::Get; batch slots live on the
// heap. Abandoning the samples in flight tells the dataset
// (Dataset::AbandonInFlight), whose Get may be stoppable from outside.
//
// Thread safety: as LoadBackend.
#ifndef FEEDLINE_SRC_LOADER_THREAD_LOAD_BACKEND_H_
#define FEEDLINE_SRC_LOADER_THREAD_LOAD_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>

#include "feedline/dataset.h"
#include "src/loader/load_backend.h"

namespace feedline::internal {

class ThreadLoadBackend final : public LoadBackend {
 public:
  // `dataset` (null for an IterableDataset) must outlive the backend.
  explicit ThreadLoadBackend(const Dataset* dataset) : dataset_(dataset) {}

  LoadBackendTraits traits() const override { return {}; }
  std::shared_ptr<SlotAllocator> slot_allocator() const override {
    return std::make_shared<HeapSlotAllocator>();
  }
  // Never called: rows cost no round trip (traits).
  bool LoadRows(std::span<RowLoad>, int64_t, SampleContext&) const override { return false; }
  void AbandonInFlight() const override {
    if (dataset_ != nullptr) dataset_->AbandonInFlight();
  }
  int64_t worker_restarts() const override { return 0; }

 private:
  const Dataset* const dataset_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_THREAD_LOAD_BACKEND_H_
