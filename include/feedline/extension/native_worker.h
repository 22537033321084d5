// Extension surface (docs/architecture.md, "Extension surface"): the
// library's WorkerProgram (worker_program.h) for a C++ Dataset or
// IterableDataset in worker processes (LoaderOptions::worker_mode): the
// child runs dataset->Get (or its own pass of the stream, opened for its
// worker id) and writes the sample's fields into the shared arena; a crash
// in Get (a decoder's segfault or abort) ends one worker process, not the
// program, and the sample is loaded again by a fresh one (a stream's pass
// cannot be replayed: its epoch ends). BuildDataLoader makes one for a
// LoaderSpec without a worker_program; a front end derives from it to fork
// its own way (the Python binding's PyNativeWorkerProgram takes the GIL
// around the fork). It may change with any version of the library.
//
// Thread safety: MakeTask runs only in a forked child.
#ifndef FEEDLINE_EXTENSION_NATIVE_WORKER_H_
#define FEEDLINE_EXTENSION_NATIVE_WORKER_H_

#include <functional>
#include <memory>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/extension/worker_program.h"
#include "feedline/iterable_dataset.h"

namespace feedline::extension {

// Its task loads map-style samples with `dataset`->Get in the child, or
// opens and advances the child's passes over `stream`. `worker_init`
// (LoaderOptions::worker_init) is the task's Start.
class FEEDLINE_EXPORT NativeWorkerProgram : public WorkerProgram {
 public:
  NativeWorkerProgram(std::shared_ptr<const Dataset> dataset,
                      std::function<void(int worker_id)> worker_init);
  NativeWorkerProgram(std::shared_ptr<const IterableDataset> stream,
                      std::function<void(int worker_id)> worker_init);
  std::unique_ptr<WorkerTask> MakeTask(const WorkerTaskInfo& info) override;
  // std::bad_alloc in the child is raised as itself, as on a worker thread.
  [[noreturn]] void RaiseError(const ErrorReply& error, int64_t index) const override;

 private:
  std::shared_ptr<const Dataset> dataset_;          // or
  std::shared_ptr<const IterableDataset> stream_;
  std::function<void(int)> worker_init_;
};

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_NATIVE_WORKER_H_
