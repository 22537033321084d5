// Extension surface (docs/architecture.md, "Extension surface"):
// BuildDataLoader, the one place a DataLoader is assembled from a
// LoaderSpec (loader_spec.h). Every front end builds through it: the public
// DataLoader constructors (a C++ Dataset or IterableDataset) and the Python
// binding (its adapters and worker program). It decides once whether the
// workers are threads or processes (worker_mode; kAuto means processes for
// a dataset that holds a global lock), and the options the loader gets say
// what was decided: worker_mode is kThread or kProcess, never kAuto. It may
// change with any version of the library.
//
// Thread safety: called while a loader is built.
#ifndef FEEDLINE_EXTENSION_BUILD_DATA_LOADER_H_
#define FEEDLINE_EXTENSION_BUILD_DATA_LOADER_H_

#include <memory>

#include "feedline/data_loader.h"
#include "feedline/export.h"
#include "feedline/extension/loader_spec.h"
#include "feedline/extension/worker_processes.h"

namespace feedline::extension {

struct BuiltLoader {
  std::unique_ptr<DataLoader> loader;
  // The worker processes (null with threads): the loader holds them too.
  std::shared_ptr<WorkerProcesses> processes;
};

// The decision of worker_mode: whether a loader's samples load in worker
// processes. kThread and num_workers = 0 never do (with no worker, samples
// load in the calling thread); kProcess with workers (a fixed count, or
// kAuto) does; kAuto does for a dataset that holds a global lock while it
// loads (a Python __getitem__ / __next__ holds the GIL), and not for a C++
// one, which runs without it, so processes would only add a round trip per
// claim.
FEEDLINE_EXPORT bool LoadsInWorkerProcesses(WorkerMode mode, bool holds_global_lock, int num_workers);

// Throws Error for a spec with neither or both of dataset and stream, and
// whatever the engine refuses in the options.
FEEDLINE_EXPORT BuiltLoader BuildDataLoader(LoaderSpec spec);

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_BUILD_DATA_LOADER_H_
