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

#include "feedline/data_loader.h"
#include "feedline/dataset.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"

namespace feedline::internal {

class Engine;
class ProcessDataset;

// The one decision of worker_mode: whether a loader's samples load in worker
// processes. kThread and num_workers = 0 never do (with no worker, samples
// load in the calling thread); kProcess with workers (a fixed count, or
// kAuto) does; kAuto does for a dataset that holds a global lock while it
// loads (a Python __getitem__ / __next__ holds the GIL), and not for a C++
// one, which runs without it, so processes would only add a round trip per
// claim. The factory below and the Python binding both ask it.
bool LoadsInWorkerProcesses(WorkerMode mode, bool holds_global_lock, int num_workers);

std::unique_ptr<Engine> MakeMapEngine(std::shared_ptr<const Dataset> dataset,
                                      LoaderOptions options);
// A dataset whose samples load in worker processes already started for it
// (InWorkerProcesses, or the Python binding's workers for a Python dataset).
std::unique_ptr<Engine> MakeProcessEngine(std::shared_ptr<const ProcessDataset> dataset,
                                          LoaderOptions options);
// The DataLoader of MakeProcessEngine's engine (for callers that do not see
// the engine's type).
std::unique_ptr<DataLoader> MakeProcessDataLoader(std::shared_ptr<const ProcessDataset> dataset,
                                                  LoaderOptions options);
// Throws Error for WorkerMode::kProcess with num_workers > 0 or kAuto.
std::unique_ptr<Engine> MakeIterableEngine(std::shared_ptr<const IterableDataset> dataset,
                                           LoaderOptions options);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_FACTORY_ENGINE_FACTORY_H_
