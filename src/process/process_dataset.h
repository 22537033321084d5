// ProcessDataset: a map-style Dataset whose samples load in worker
// processes (ProcessWorkers). Engine thread w forwards Get(index) to process
// w; the sample comes back through the shared arena and is copied into
// `out` (for fixed fields, the batch row itself).
//
// Thread safety: as Dataset (Get from the loader's worker threads, each for
// its own worker id).
#ifndef FEEDLINE_SRC_PROCESS_PROCESS_DATASET_H_
#define FEEDLINE_SRC_PROCESS_PROCESS_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "src/process/process_workers.h"

namespace feedline::internal {

class ProcessDataset : public Dataset {
 public:
  // `described_by`, when given, answers Source, Length and FixedFields (the
  // parent's copy of the dataset the workers load).
  ProcessDataset(std::shared_ptr<ProcessWorkers> workers, int64_t size,
                 std::shared_ptr<const Dataset> described_by = nullptr);

  int64_t size() const override { return size_; }
  // REQUIRES: called by a loader worker (ctx.worker_id() in [0, num_workers)).
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  int64_t Length(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;
  void AbandonInFlight() const override { workers_->AbandonInFlight(); }

  const std::shared_ptr<ProcessWorkers>& workers() const { return workers_; }

 private:
  std::shared_ptr<ProcessWorkers> workers_;
  int64_t size_;
  std::shared_ptr<const Dataset> described_by_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_PROCESS_DATASET_H_
