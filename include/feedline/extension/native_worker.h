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
// Thread safety: RunChild runs only in a forked child.
#ifndef FEEDLINE_EXTENSION_NATIVE_WORKER_H_
#define FEEDLINE_EXTENSION_NATIVE_WORKER_H_

#include <functional>
#include <memory>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/extension/worker_program.h"
#include "feedline/iterable_dataset.h"

namespace feedline::extension {

// Serves map-style requests by calling `dataset`->Get in the child, or a
// stream's requests (open a pass, its next item) from `stream`.
// `worker_init` (LoaderOptions::worker_init) runs in the child before it
// reports ready.
class FEEDLINE_EXPORT NativeWorkerProgram : public WorkerProgram {
 public:
  NativeWorkerProgram(std::shared_ptr<const Dataset> dataset,
                      std::function<void(int worker_id)> worker_init);
  NativeWorkerProgram(std::shared_ptr<const IterableDataset> stream,
                      std::function<void(int worker_id)> worker_init);
  void RunChild(const WorkerChannel& channel) override;
  // std::bad_alloc in the child is raised as itself, as on a worker thread.
  [[noreturn]] void RaiseError(const ErrorReply& error, int64_t index) const override;

 private:
  // A kOpen request: opens this worker's pass into `*pass`, replies kReady
  // or what Open threw.
  void ServePassOpen(const WorkerChannel& channel, const WorkRequest& request,
                     std::unique_ptr<SampleStream>* pass) const;

  std::shared_ptr<const Dataset> dataset_;          // or
  std::shared_ptr<const IterableDataset> stream_;
  std::function<void(int)> worker_init_;
};

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_NATIVE_WORKER_H_
