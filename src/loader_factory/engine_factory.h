// The factory of the DataLoader's engine: the one place that knows both the
// engine (src/loader) and worker processes (src/process), so that neither
// includes the other's upward (docs/architecture.md, "Layers").
//
// It follows LoaderOptions::worker_mode: a C++ Dataset with
// WorkerMode::kProcess and num_workers > 0 (or kAuto) loads in worker
// processes (native_worker.h); kThread and kAuto load on threads (a C++
// Dataset needs no global lock, so auto is threads). An IterableDataset with
// kProcess is refused: a C++ stream has no process protocol yet.
//
// Thread safety: called while a DataLoader is built.
#ifndef FEEDLINE_SRC_LOADER_FACTORY_ENGINE_FACTORY_H_
#define FEEDLINE_SRC_LOADER_FACTORY_ENGINE_FACTORY_H_

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

#endif  // FEEDLINE_SRC_LOADER_FACTORY_ENGINE_FACTORY_H_
