#include "src/process/worker_mode.h"

#include <utility>

#include "feedline/error.h"
#include "src/loader/engine.h"
#include "src/process/native_worker.h"

namespace feedline::internal {

std::unique_ptr<Engine> MakeMapEngine(std::shared_ptr<const Dataset> dataset,
                                      LoaderOptions options) {
  if (options.worker_mode == WorkerMode::kProcess && options.num_workers > 0) {
    dataset = InWorkerProcesses(std::move(dataset), &options);
  }
  return std::make_unique<Engine>(std::move(dataset), std::move(options));
}

std::unique_ptr<Engine> MakeIterableEngine(std::shared_ptr<const IterableDataset> dataset,
                                           LoaderOptions options) {
  if (options.worker_mode == WorkerMode::kProcess && options.num_workers > 0) {
    throw Error(
        "DataLoader: worker_mode process is for a map-style Dataset; a C++ IterableDataset "
        "loads on worker threads (use worker_mode thread or auto)");
  }
  return std::make_unique<Engine>(std::move(dataset), std::move(options));
}

}  // namespace feedline::internal
