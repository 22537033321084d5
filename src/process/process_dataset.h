// ProcessDataset: a map-style Dataset whose samples load in worker
// processes (ProcessWorkers). Engine thread w forwards Get(index) to process
// w, which writes the fields bound to `out`'s batch row straight into it (the
// slots come from the workers' shared allocator, which the engine's
// ProcessLoadBackend gives it); other fields come back through the shared
// arena and are copied into `out`. The engine loads a claim of several rows
// through the backend instead (ProcessLoadBackend::LoadRows), in one
// request; src/loader_factory pairs the two.
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
  // To the parent's copy: it fetches ahead for the workers (into a cache
  // they share).
  void EpochOrder(std::span<const int64_t> order) const override;
  void EpochProgress(int64_t delivered) const override;

  const std::shared_ptr<ProcessWorkers>& workers() const { return workers_; }

 private:
  std::shared_ptr<ProcessWorkers> workers_;
  int64_t size_;
  std::shared_ptr<const Dataset> described_by_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_PROCESS_DATASET_H_
