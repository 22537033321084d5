// BuildDataLoader: the one place a DataLoader is assembled, and the one
// place that knows both the engine (src/loader) and worker processes
// (src/process), so that neither includes the other's upward
// (docs/architecture.md, "Layers"). Every front end builds through it: the
// public DataLoader constructors (a C++ Dataset or IterableDataset), the
// Python binding (its adapters and worker program, loader_spec.h).
//
// It makes every thread/process decision, once (LoadsInWorkerProcesses):
//   - threads: the engine with a ThreadLoadBackend, which runs
//     options.worker_init on each worker thread;
//   - processes: ProcessWorkers running the spec's worker program (or a
//     NativeWorkerProgram for a C++ Dataset or IterableDataset, which runs
//     options.worker_init in the child), and the engine with a ProcessLoadBackend over them; a
//     stream's items come through a ProcessIterableDataset. The user's
//     worker_init then runs in the processes only.
// The options the engine gets say what was decided: worker_mode is kThread
// or kProcess, never kAuto.
//
// Thread safety: called while a loader is built.
#ifndef FEEDLINE_SRC_LOADER_FACTORY_BUILD_DATA_LOADER_H_
#define FEEDLINE_SRC_LOADER_FACTORY_BUILD_DATA_LOADER_H_

#include <memory>

#include "feedline/data_loader.h"
#include "feedline/extension/build_data_loader.h"
#include "feedline/loader_options.h"
#include "src/loader_factory/loader_spec.h"
#include "src/process/process_workers.h"

namespace feedline::internal {

// BuiltLoader, BuildDataLoader, LoadsInWorkerProcesses and WorkerProcesses are the extension
// surface's (feedline/extension/build_data_loader.h); BuildEngine, the
// engine without its DataLoader, is the library's own.
using extension::BuildDataLoader;
using extension::BuiltLoader;
using extension::LoadsInWorkerProcesses;
using extension::WorkerProcesses;

class Engine;


struct BuiltEngine {
  std::unique_ptr<Engine> engine;
  // The worker processes (null with threads): the engine's backend holds
  // them too; a front end may shut them down first when it closes, to wake
  // engine threads that wait on them, and report their pids.
  std::shared_ptr<ProcessWorkers> processes;
};

// Throws as BuildDataLoader does.
BuiltEngine BuildEngine(LoaderSpec spec);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_FACTORY_BUILD_DATA_LOADER_H_
