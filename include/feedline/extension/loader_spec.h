// Extension surface (docs/architecture.md, "Extension surface"):
// everything a DataLoader is built from (BuildDataLoader,
// build_data_loader.h): what loads (a map-style dataset or a stream), the
// options, and for worker processes the program the processes run
// (worker_program.h). A front end fills it with its adapters and makes no
// decision of its own: whether the workers are threads or processes is
// BuildDataLoader's. The Python binding builds every loader so
// (python/feedline_module.cc). It may change with any version of the
// library.
//
// Example (a Python map-style dataset, as the binding builds it):
//   LoaderSpec spec;
//   spec.dataset = std::make_shared<PyDataset>(...);       // Get on a thread
//   spec.worker_program = std::make_shared<PythonWorkerProgram>(...);  // in a process
//   spec.holds_global_lock = true;                         // __getitem__ holds the GIL
//   spec.options = options;                                // worker_mode as the user asked
//   BuiltLoader built = BuildDataLoader(std::move(spec));
//
// Thread safety: a plain value.
#ifndef FEEDLINE_EXTENSION_LOADER_SPEC_H_
#define FEEDLINE_EXTENSION_LOADER_SPEC_H_

#include <memory>

#include "feedline/dataset.h"
#include "feedline/extension/worker_program.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"

namespace feedline::extension {

struct LoaderSpec {
  // Exactly one of the two. The map-style dataset also describes the
  // samples to the loader (size, Source, FixedFields, Length) when they
  // load in worker processes.
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<const IterableDataset> stream;
  // As the user gave them: worker_mode may be kAuto, num_workers kAuto.
  LoaderOptions options;
  // What a worker process runs, for a dataset that loads in processes: the
  // Python binding's for a Python dataset (it runs worker_init_fn itself,
  // in the child). Null: a C++ Dataset's or IterableDataset's
  // (NativeWorkerProgram), given options.worker_init to run in the child.
  std::shared_ptr<WorkerProgram> worker_program;
  // Loading holds a global lock (a Python __getitem__ or __next__ holds the
  // GIL): worker_mode kAuto then means processes.
  bool holds_global_lock = false;
  // Worker processes write samples into shared memory; false: the arrays
  // follow the metadata through the socket.
  bool use_shared_memory = true;
};

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_LOADER_SPEC_H_
