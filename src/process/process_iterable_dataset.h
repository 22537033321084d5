// ProcessIterableDataset: an IterableDataset whose items come from worker
// processes (ProcessWorkers): worker w's process runs its own copy's stream,
// opened for worker w of num_workers and the epoch, and sends the items one
// by one. A worker that dies mid-pass cannot be replayed (a stream has no
// position to go back to): its pass ends with the program's
// RaiseStreamDeath (for a C++ stream a failed item, kWorkerDied, for the
// error policy; for a Python one a RuntimeError that ends the epoch). src/loader_factory pairs it
// with a ProcessLoadBackend, which starts the processes.
//
// Thread safety: as IterableDataset (Open and each stream's Next from the
// loader's worker w for stream w).
#ifndef FEEDLINE_SRC_PROCESS_PROCESS_ITERABLE_DATASET_H_
#define FEEDLINE_SRC_PROCESS_PROCESS_ITERABLE_DATASET_H_

#include <cstdint>
#include <memory>

#include "feedline/iterable_dataset.h"
#include "src/process/process_workers.h"

namespace feedline::internal {

class ProcessIterableDataset : public IterableDataset {
 public:
  ProcessIterableDataset(std::shared_ptr<ProcessWorkers> workers,
                         std::shared_ptr<const WorkerProgram> program);
  // A failure to open the pass (the stream's own, in the child) is raised
  // as a SampleError whose message says so (WorkerProgram::OpenFailurePrefix).
  std::unique_ptr<SampleStream> Open(int worker_id, int num_workers,
                                     int64_t epoch) const override;

 private:
  std::shared_ptr<ProcessWorkers> workers_;
  std::shared_ptr<const WorkerProgram> program_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_PROCESS_ITERABLE_DATASET_H_
