#include "src/process/process_iterable_dataset.h"

#include <utility>

#include "feedline/error.h"

namespace feedline::internal {
namespace {

// One worker's pass over its process's copy of the stream.
class ProcessStream : public SampleStream {
 public:
  ProcessStream(std::shared_ptr<ProcessWorkers> workers,
                std::shared_ptr<const WorkerProgram> program, int worker)
      : workers_(std::move(workers)), program_(std::move(program)), worker_(worker) {}

  bool Next(Sample& out, SampleContext& ctx) override {
    if (died_) return false;  // the pass ended with its process
    WorkRequest request;
    request.kind = static_cast<uint32_t>(RequestKind::kNext);
    request.index = ctx.index();
    request.epoch = ctx.epoch();
    request.seed = ctx.seed();
    request.context_index = ctx.index();
    WorkerDeath death;
    switch (workers_->Exchange(worker_, request, &out, &ctx, &death)) {
      case ProcessWorkers::Outcome::kSample: return true;
      case ProcessWorkers::Outcome::kEnd:
      case ProcessWorkers::Outcome::kClosing: return false;  // the loader is closing
      case ProcessWorkers::Outcome::kDied:
        died_ = true;
        program_->RaiseStreamDeath(worker_, death);
      case ProcessWorkers::Outcome::kReady: break;
    }
    throw Error("the worker process answered an item request with no item");
  }

 private:
  std::shared_ptr<ProcessWorkers> workers_;
  std::shared_ptr<const WorkerProgram> program_;
  int worker_;
  bool died_ = false;
};

}  // namespace

ProcessIterableDataset::ProcessIterableDataset(std::shared_ptr<ProcessWorkers> workers,
                                               std::shared_ptr<const WorkerProgram> program)
    : workers_(std::move(workers)), program_(std::move(program)) {}

std::unique_ptr<SampleStream> ProcessIterableDataset::Open(int worker_id, int num_workers,
                                                           int64_t epoch) const {
  (void)num_workers;  // the processes know it
  WorkRequest request;
  request.kind = static_cast<uint32_t>(RequestKind::kOpen);
  request.index = worker_id;
  request.epoch = epoch;
  request.seed = workers_->options().seed;
  WorkerDeath death;
  ProcessWorkers::Outcome outcome;
  try {
    outcome = workers_->Exchange(worker_id, request, nullptr, nullptr, &death);
  } catch (const SampleError& e) {
    throw SampleError(e.kind(), e.source(), program_->OpenFailurePrefix() + e.message(), -1, e.origin());
  }
  if (outcome == ProcessWorkers::Outcome::kDied) program_->RaiseStreamDeath(worker_id, death);
  // On kClosing the stream's first Next ends the pass.
  return std::make_unique<ProcessStream>(workers_, program_, worker_id);
}

}  // namespace feedline::internal
