// ProcessLoadBackend: the engine's LoadBackend when samples load in worker
// processes (ProcessWorkers). Starting engine worker w starts process w (or
// keeps a persistent one), whose child runs the user's worker_init. Each
// engine worker thread w forwards its rows to process w, which writes them
// into batch slots allocated from the workers' shared memory (when
// use_shared_memory; else slots live on the heap and rows cross the socket);
// a claim's rows go in one request, so their round trip is paid once. When
// the process dies with them in flight, the rows load again one by one,
// each restarting the process as needed, which finds the row that killed it
// (it fails after ProcessWorkerOptions::max_deaths_per_sample deaths).
// Abandoning the samples in flight stops the waits on the processes;
// restarts count the processes started again after one died.
//
// For a stream in processes (ProcessIterableDataset) the backend only
// starts the workers: the items come through the stream, into heap slots.
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
  // `dataset_size`: the length of the dataset the processes load, or -1 for
  // a stream's workers.
  ProcessLoadBackend(std::shared_ptr<ProcessWorkers> workers, int64_t dataset_size);

  LoadBackendTraits traits() const override;
  std::shared_ptr<SlotAllocator> slot_allocator() const override;
  // ProcessWorkers::StartWorker; a worker_init that failed in the child (or
  // a process that died while starting, repeatedly) is a WorkerInitError, a
  // failed fork a WorkerStartError.
  void StartWorker(int worker) const override;
  // An index out of range fails its row alone, as Get fails it.
  void LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx,
                bool whole_batch) const override;
  void AbandonInFlight() const override { workers_->AbandonInFlight(); }
  int64_t worker_restarts() const override { return workers_->restarts(); }

  const std::shared_ptr<ProcessWorkers>& workers() const { return workers_; }

 private:
  // Each row by its own request (ProcessWorkers::LoadSample).
  void LoadOneByOne(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx) const;

  const std::shared_ptr<ProcessWorkers> workers_;
  const int64_t dataset_size_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_PROCESS_LOAD_BACKEND_H_
