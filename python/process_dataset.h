// Python datasets in worker processes: the Python side of the library's
// process workers (src/process/process_workers.h), which own the processes,
// sockets, shared arenas, restarts and death diagnosis.
//
// PythonWorkerProgram forks with the GIL held, between PyOS_BeforeFork and
// PyOS_AfterFork_Child/Parent (what os.fork does), runs the Python worker
// loop in the child (worker_process.h), checks each reply's schema against
// the loader's Structure, and raises a child's KeyboardInterrupt, SystemExit,
// GeneratorExit or MemoryError again as itself.
//
// Example (what feedline_module.cc does for worker_mode="process"):
//   auto workers = MakePythonWorkers(dataset, init_fn, true, options, structure);
//   auto adapter = std::make_shared<PyProcessDataset>(workers, dataset);
//   loader_options.worker_init = [workers](int w) { workers->StartWorker(w); };
//   DataLoader loader(adapter, loader_options);
//
// Thread safety: as ProcessWorkers.
#ifndef FEEDLINE_PYTHON_PROCESS_DATASET_H_
#define FEEDLINE_PYTHON_PROCESS_DATASET_H_

#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>

#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"
#include "python/python_support.h"
#include "src/process/native_worker.h"
#include "src/process/process_dataset.h"
#include "src/process/process_workers.h"

namespace feedline::python {

// The fork, made safe for the interpreter: the GIL held, garbage
// collection off, between PyOS_BeforeFork and PyOS_AfterFork_Child/Parent
// (what os.fork does); the child freezes what it inherited (gc.freeze), so
// no inherited loader is collected there. Used by the spawner thread only.
class PythonFork {
 public:
  void Before();
  void InParent();
  void InChild();

 private:
  PyGILState_STATE gil_{};
  int gc_was_enabled_ = 0;
};

class PythonWorkerProgram : public internal::WorkerProgram {
 public:
  // REQUIRES: the GIL.
  // `seed_samples`: as PythonWorkerConfig::seed_samples.
  PythonWorkerProgram(py::object dataset, py::object worker_init_fn, bool seed_samples,
                      std::shared_ptr<Structure> structure);

  void BeforeFork() override;
  void AfterForkInParent() override;
  void AfterForkInChild() override;
  void RunChild(const internal::WorkerChannel& channel) override;
  void CheckReply(const internal::SampleReply& reply) const override;
  [[noreturn]] void RaiseError(const internal::ErrorReply& error, int64_t index) const override;

 private:
  std::shared_ptr<PyRef> dataset_;
  std::shared_ptr<PyRef> worker_init_fn_;
  bool seed_samples_;
  std::shared_ptr<Structure> structure_;
  PythonFork fork_;
};

// A native dataset in worker processes of a Python program: the library's
// native worker loop (the child calls Get without the GIL, as a worker
// thread would; a Python transform takes it), forked as PythonFork says,
// since a native dataset may hold Python transforms.
class PyNativeWorkerProgram : public internal::NativeWorkerProgram {
 public:
  using NativeWorkerProgram::NativeWorkerProgram;
  void BeforeFork() override { fork_.Before(); }
  void AfterForkInParent() override { fork_.InParent(); }
  void AfterForkInChild() override { fork_.InChild(); }
  void RunChild(const internal::WorkerChannel& channel) override;

 private:
  PythonFork fork_;
};

// The worker processes for a Python dataset. REQUIRES: the GIL.
std::shared_ptr<internal::ProcessWorkers> MakePythonWorkers(
    py::object dataset, py::object worker_init_fn, bool seed_samples,
    internal::ProcessWorkerOptions options, std::shared_ptr<Structure> structure);

// A Python map-style dataset whose samples load in `workers`.
class PyProcessDataset : public internal::ProcessDataset {
 public:
  // REQUIRES: the GIL.
  PyProcessDataset(std::shared_ptr<internal::ProcessWorkers> workers, py::object dataset);
  // The Python dataset's source(index), when it has one.
  std::string Source(int64_t index) const override;

 private:
  std::shared_ptr<PyRef> dataset_;
};

// A Python IterableDataset whose items come from `workers`: worker w's
// process runs its own copy's iterator, opened with get_worker_info()
// naming w (as in torch), and sends the items one by one. A worker that
// dies mid-pass cannot be replayed (an iterator has no position to go back
// to): the epoch ends with a RuntimeError naming the worker and the signal,
// whatever the error policy.
class PyProcessIterableDataset : public IterableDataset {
 public:
  explicit PyProcessIterableDataset(std::shared_ptr<internal::ProcessWorkers> workers);
  std::unique_ptr<SampleStream> Open(int worker_id, int num_workers,
                                     int64_t epoch) const override;

 private:
  std::shared_ptr<internal::ProcessWorkers> workers_;
};

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PROCESS_DATASET_H_
