// Worker processes for a C++ Dataset (LoaderOptions::worker_mode): the
// child runs dataset->Get and writes the sample's fields into the shared
// arena; a crash in Get (a decoder's segfault or abort) ends one worker
// process, not the program, and the sample is loaded again by a fresh one.
//
// src/loader_factory makes the program and its ProcessWorkers when a C++
// Dataset loads in worker processes.
//
// Thread safety: RunChild runs only in a forked child.
#ifndef FEEDLINE_SRC_PROCESS_NATIVE_WORKER_H_
#define FEEDLINE_SRC_PROCESS_NATIVE_WORKER_H_

#include <functional>
#include <memory>

#include "feedline/dataset.h"
#include "src/process/process_workers.h"

namespace feedline::internal {

// Serves map-style requests by calling `dataset`->Get in the child.
// `worker_init` (LoaderOptions::worker_init) runs in the child before it
// reports ready.
class NativeWorkerProgram : public WorkerProgram {
 public:
  NativeWorkerProgram(std::shared_ptr<const Dataset> dataset,
                      std::function<void(int worker_id)> worker_init);
  void RunChild(const WorkerChannel& channel) override;
  // std::bad_alloc in the child is raised as itself, as on a worker thread.
  [[noreturn]] void RaiseError(const ErrorReply& error, int64_t index) const override;

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::function<void(int)> worker_init_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_NATIVE_WORKER_H_
