// ProcessLoadBackend: the engine's LoadBackend for a map-style dataset whose
// samples load in worker processes (ProcessWorkers). Each engine worker
// thread w forwards its rows to process w, which writes them into batch
// slots allocated from the workers' shared memory (when use_shared_memory;
// else slots live on the heap and rows cross the socket); a claim's rows go
// in one request, so their round trip is paid once. Abandoning the samples
// in flight stops the waits on the processes; restarts count the processes
// started again after one died.
//
// Thread safety: as LoadBackend.
#ifndef FEEDLINE_SRC_PROCESS_PROCESS_LOAD_BACKEND_H_
#define FEEDLINE_SRC_PROCESS_PROCESS_LOAD_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>

#include "src/loader/load_backend.h"
#include "src/process/process_workers.h"

namespace feedline::internal {

class ProcessLoadBackend final : public LoadBackend {
 public:
  // `dataset_size`: the length of the dataset the processes load.
  ProcessLoadBackend(std::shared_ptr<ProcessWorkers> workers, int64_t dataset_size);

  LoadBackendTraits traits() const override;
  std::shared_ptr<SlotAllocator> slot_allocator() const override;
  // False (nothing sent) if an index is out of range: row by row, that row
  // fails alone as Get fails it.
  bool LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx) const override;
  void AbandonInFlight() const override { workers_->AbandonInFlight(); }
  int64_t worker_restarts() const override { return workers_->restarts(); }

 private:
  const std::shared_ptr<ProcessWorkers> workers_;
  const int64_t dataset_size_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_PROCESS_LOAD_BACKEND_H_
