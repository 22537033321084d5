// The DataLoader's engine for LoaderOptions::worker_mode: a C++ Dataset with
// WorkerMode::kProcess and num_workers > 0 (or kAuto) loads in worker processes
// (native_worker.h); kThread and kAuto load on threads (a C++ Dataset needs
// no global lock, so auto is threads). An IterableDataset with kProcess is
// refused: a C++ stream has no process protocol yet.
//
// Thread safety: called while a DataLoader is built.
#ifndef FEEDLINE_SRC_PROCESS_WORKER_MODE_H_
#define FEEDLINE_SRC_PROCESS_WORKER_MODE_H_

#include <memory>

#include "feedline/dataset.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"

namespace feedline::internal {

class Engine;

std::unique_ptr<Engine> MakeMapEngine(std::shared_ptr<const Dataset> dataset,
                                      LoaderOptions options);
// Throws Error for WorkerMode::kProcess with num_workers > 0 or kAuto.
std::unique_ptr<Engine> MakeIterableEngine(std::shared_ptr<const IterableDataset> dataset,
                                           LoaderOptions options);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_MODE_H_
