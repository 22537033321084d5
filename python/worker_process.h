// The loop a forked worker process runs for a Python dataset: read a
// WorkRequest, and for a map-style sample seed the Python generators, call
// dataset[index] and write the arrays with FillFields, as a thread worker
// would into its batch row, into the shared arena (or a buffer sent after
// the metadata); for an IterableDataset open a pass (iter(dataset), with
// get_worker_info() naming this worker) or take its next item.
//
// The process setup (die with the parent, ignore SIGINT, close the other
// workers' descriptors) and the staging are the library's, through its
// extension surface (feedline/extension/worker_child.h). The child leaves
// with _exit: it never runs the parent's atexit handlers or destructors.
#ifndef FEEDLINE_PYTHON_WORKER_PROCESS_H_
#define FEEDLINE_PYTHON_WORKER_PROCESS_H_

#include <memory>

#include "feedline/extension/worker_child.h"
#include "python/python_support.h"
#include "python/worker_collate.h"

namespace feedline::python {

struct PythonWorkerConfig {
  std::shared_ptr<PyRef> dataset;
  std::shared_ptr<PyRef> worker_init_fn;  // may hold None
  // Seed `random`, numpy.random and torch before each sample from (seed,
  // epoch, index) (python_seeding.h). false leaves the generators to the
  // worker: feedline.torch seeds them once per worker in its
  // worker_init_fn, as torch does.
  bool seed_samples = true;
  // Samples are pickled whole for a collate_fn (Structure::CarryWhole).
  bool whole_samples = false;
  // A collate_fn to run here (worker_collate.h), called with the list of
  // samples as the dataset returned them; None: the parent collates. The
  // child keeps the objects of its last `held_limit` sample replies.
  std::shared_ptr<PyRef> collate_fn;
  int64_t held_limit = 0;
};

// Runs in the child right after the fork. REQUIRES: the GIL. Never returns.
[[noreturn]] void RunWorkerProcess(const extension::WorkerChannel& channel,
                                   const PythonWorkerConfig& config);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_WORKER_PROCESS_H_
