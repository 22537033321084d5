// ThreadLoadBackend: samples load on the engine's own worker threads (or the
// caller's), each row by a call of Dataset::Get; batch slots live on the
// heap. Starting a worker runs LoaderOptions::worker_init on its thread.
// Abandoning the samples in flight tells the dataset
// (Dataset::AbandonInFlight), whose Get may be stoppable from outside.
//
// Thread safety: as LoadBackend.
#ifndef FEEDLINE_SRC_LOADER_THREAD_LOAD_BACKEND_H_
#define FEEDLINE_SRC_LOADER_THREAD_LOAD_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "feedline/dataset.h"
#include "src/loader/load_backend.h"

namespace feedline::internal {

class ThreadLoadBackend final : public LoadBackend {
 public:
  // `dataset` (null for an IterableDataset, whose streams load themselves)
  // must outlive the backend. `worker_init` may be empty.
  explicit ThreadLoadBackend(const Dataset* dataset,
                             std::function<void(int worker_id)> worker_init = {})
      : dataset_(dataset), worker_init_(std::move(worker_init)) {}

  LoadBackendTraits traits() const override;
  std::shared_ptr<SlotAllocator> slot_allocator() const override {
    return std::make_shared<HeapSlotAllocator>();
  }
  // Runs worker_init(worker); what it throws becomes a WorkerInitError
  // naming the worker, except an interrupt, passed on as it is.
  void StartWorker(int worker) const override;
  // Each row by Dataset::Get, in order.
  void LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx,
                bool whole_batch) const override;
  void AbandonInFlight() const override {
    if (dataset_ != nullptr) dataset_->AbandonInFlight();
  }
  int64_t worker_restarts() const override { return 0; }

 private:
  const Dataset* const dataset_;
  const std::function<void(int)> worker_init_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_THREAD_LOAD_BACKEND_H_
