#include "src/loader_factory/build_data_loader.h"

#include <utility>

#include "feedline/error.h"
#include "src/loader/engine.h"
#include "src/process/native_worker.h"
#include "src/process/process_iterable_dataset.h"
#include "src/process/process_load_backend.h"

namespace feedline::internal {
namespace {

ProcessWorkerOptions ProcessOptionsFor(const LoaderSpec& spec) {
  const LoaderOptions& options = spec.options;
  ProcessWorkerOptions process_options;
  // num_workers kAuto: the engine runs up to AutoMaxWorkers() workers and
  // sets how many are active; each gets its process when it starts.
  process_options.num_workers =
      options.num_workers == kAuto ? AutoMaxWorkers() : options.num_workers;
  process_options.persistent_workers = options.persistent_workers;
  process_options.use_shared_memory = spec.use_shared_memory;
  process_options.seed = options.seed;
  return process_options;
}

}  // namespace

BuiltEngine BuildEngine(LoaderSpec spec) {
  if (!spec.dataset && !spec.stream) throw Error("DataLoader: dataset must not be null");
  if (spec.dataset && spec.stream) {
    throw Error("DataLoader: a loader loads a map-style dataset or a stream, not both");
  }
  LoaderOptions options = std::move(spec.options);
  const bool processes =
      LoadsInWorkerProcesses(options.worker_mode, spec.holds_global_lock, options.num_workers);
  options.worker_mode = processes ? WorkerMode::kProcess : WorkerMode::kThread;
  if (!processes) {
    if (spec.stream) {
      return {std::make_unique<Engine>(std::move(spec.stream), std::move(options)), nullptr};
    }
    return {std::make_unique<Engine>(std::move(spec.dataset), std::move(options)), nullptr};
  }
  std::shared_ptr<WorkerProgram> program = std::move(spec.worker_program);
  // The user's worker_init runs in the processes (the program's), not on
  // the engine's threads.
  if (!program && spec.stream) {
    program = std::make_shared<NativeWorkerProgram>(spec.stream, options.worker_init);
  } else if (!program) {
    program = std::make_shared<NativeWorkerProgram>(spec.dataset, options.worker_init);
  }
  options.worker_init = nullptr;
  auto workers = std::make_shared<ProcessWorkers>(program, ProcessOptionsFor(spec));
  if (spec.stream) {
    auto backend = std::make_shared<ProcessLoadBackend>(workers, /*dataset_size=*/-1);
    auto stream = std::make_shared<ProcessIterableDataset>(workers, std::move(program));
    return {std::make_unique<Engine>(std::move(stream), std::move(options), std::move(backend)),
            std::move(workers)};
  }
  auto backend = std::make_shared<ProcessLoadBackend>(workers, spec.dataset->size());
  return {std::make_unique<Engine>(std::move(spec.dataset), std::move(options), std::move(backend)),
          std::move(workers)};
}

}  // namespace feedline::internal

namespace feedline::extension {

bool LoadsInWorkerProcesses(WorkerMode mode, bool holds_global_lock, int num_workers) {
  if (num_workers <= 0 && num_workers != kAuto) return false;
  return mode == WorkerMode::kProcess || (mode == WorkerMode::kAuto && holds_global_lock);
}

BuiltLoader BuildDataLoader(LoaderSpec spec) {
  internal::BuiltEngine built = internal::BuildEngine(std::move(spec));
  return {std::make_unique<DataLoader>(std::move(built.engine)), std::move(built.processes)};
}

}  // namespace feedline::extension
