#include "src/loader_factory/engine_factory.h"

#include <utility>

#include "feedline/error.h"
#include "src/loader/engine.h"
#include "src/process/native_worker.h"
#include "src/process/process_dataset.h"
#include "src/process/process_load_backend.h"

namespace feedline::internal {
namespace {

// A C++ dataset holds no global lock: only kProcess puts it in processes.
bool InProcesses(const LoaderOptions& options) {
  return LoadsInWorkerProcesses(options.worker_mode, /*holds_global_lock=*/false,
                                options.num_workers);
}

}  // namespace

bool LoadsInWorkerProcesses(WorkerMode mode, bool holds_global_lock, int num_workers) {
  if (num_workers <= 0 && num_workers != kAuto) return false;
  return mode == WorkerMode::kProcess || (mode == WorkerMode::kAuto && holds_global_lock);
}

std::unique_ptr<Engine> MakeMapEngine(std::shared_ptr<const Dataset> dataset,
                                      LoaderOptions options) {
  if (InProcesses(options)) {
    auto processes = InWorkerProcesses(std::move(dataset), &options);
    return MakeProcessEngine(std::move(processes), std::move(options));
  }
  return std::make_unique<Engine>(std::move(dataset), std::move(options));
}

std::unique_ptr<Engine> MakeProcessEngine(std::shared_ptr<const ProcessDataset> dataset,
                                          LoaderOptions options) {
  if (!dataset) throw Error("DataLoader: dataset must not be null");
  auto backend = std::make_shared<ProcessLoadBackend>(dataset->workers(), dataset->size());
  return std::make_unique<Engine>(std::move(dataset), std::move(options), std::move(backend));
}

std::unique_ptr<DataLoader> MakeProcessDataLoader(std::shared_ptr<const ProcessDataset> dataset,
                                                  LoaderOptions options) {
  return std::make_unique<DataLoader>(MakeProcessEngine(std::move(dataset), std::move(options)));
}

std::unique_ptr<Engine> MakeIterableEngine(std::shared_ptr<const IterableDataset> dataset,
                                           LoaderOptions options) {
  if (InProcesses(options)) {
    throw Error(
        "DataLoader: worker_mode process is for a map-style Dataset; a C++ IterableDataset "
        "loads on worker threads (use worker_mode thread or auto)");
  }
  return std::make_unique<Engine>(std::move(dataset), std::move(options));
}

}  // namespace feedline::internal
