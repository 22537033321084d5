// The task a forked worker process runs for a Python dataset
// (feedline/extension/worker_task.h; the library's child loop calls it):
// Start sets get_worker_info(), one torch thread and worker_init_fn; Load
// seeds the Python generators, calls dataset[index] and writes the sample's
// arrays with FillSample, as a thread worker would, into the batch row the
// request named or the shared arena (or, with a collate_fn run here, keeps
// the sample and writes a placeholder, worker_collate.h); OpenPass and Next
// run iter(dataset) with get_worker_info() naming this worker; Collate calls
// collate_fn on the samples it kept. The interpreter lock is released while
// the child waits for a request.
//
// The child leaves with _exit: it never runs the parent's atexit handlers
// or destructors.
#ifndef FEEDLINE_PYTHON_WORKER_PROCESS_H_
#define FEEDLINE_PYTHON_WORKER_PROCESS_H_

#include <memory>

#include "feedline/extension/worker_task.h"
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

// In the child right after the fork. REQUIRES: the GIL, which the task
// keeps except while the child waits for a request.
std::unique_ptr<extension::WorkerTask> MakePythonWorkerTask(const extension::WorkerTaskInfo& info,
                                                            const PythonWorkerConfig& config);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_WORKER_PROCESS_H_
