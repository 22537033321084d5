// The programs a worker process runs for a Python loader: the Python side of
// the library's process workers, which own the processes, sockets, shared
// arenas, restarts and death diagnosis (the extension surface's
// WorkerProgram, feedline/extension/worker_program.h). The binding hands one
// to BuildDataLoader in its LoaderSpec (feedline/extension/loader_spec.h),
// which runs it when it decides the workers are processes.
//
// PythonWorkerProgram forks with the GIL held, between PyOS_BeforeFork and
// PyOS_AfterFork_Child/Parent (what os.fork does), gives the child the
// Python worker task (worker_process.h), checks each reply's schema against
// the loader's Structure, and raises a child's KeyboardInterrupt, SystemExit,
// GeneratorExit or MemoryError again as itself (and a stream worker's death
// as a RuntimeError, whatever the error policy).
//
// Example (what feedline_module.cc does for a Python dataset):
//   spec.worker_program = std::make_shared<PythonWorkerProgram>(
//       dataset, worker_init_fn, /*seed_samples=*/true, structure);
//
// Thread safety: as ProcessWorkers.
#ifndef FEEDLINE_PYTHON_PYTHON_WORKER_PROGRAM_H_
#define FEEDLINE_PYTHON_PYTHON_WORKER_PROGRAM_H_

#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>

#include "feedline/extension/native_worker.h"
#include "feedline/extension/worker_program.h"
#include "python/python_support.h"
#include "python/worker_collate.h"

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

class PythonWorkerProgram : public extension::WorkerProgram {
 public:
  // REQUIRES: the GIL.
  // `seed_samples`: as PythonWorkerConfig::seed_samples.
  PythonWorkerProgram(py::object dataset, py::object worker_init_fn, bool seed_samples,
                      std::shared_ptr<Structure> structure);

  // Runs `collate_fn` in the workers (worker_collate.h): the children keep
  // their last `held_limit` samples, and `parent` learns which process
  // loaded which row. Before the first fork.
  void CollateInWorkers(py::object collate_fn, std::shared_ptr<WorkerCollate> parent,
                        int64_t held_limit);

  void BeforeFork() override;
  void AfterForkInParent() override;
  void AfterForkInChild() override;
  std::unique_ptr<extension::WorkerTask> MakeTask(const extension::WorkerTaskInfo& info) override;
  void CheckSchema(const SampleSchema& schema) const override;
  void OnSampleReply(int worker, int64_t process, const Sample* out) const override;
  bool CollatesInWorker() const override { return collate_fn_ != nullptr; }
  [[noreturn]] void RaiseError(const extension::ErrorReply& error, int64_t index) const override;
  [[noreturn]] void RaiseStreamDeath(int worker,
                                     const extension::WorkerDeath& death) const override;
  std::string OpenFailurePrefix() const override { return "iter(dataset) raised "; }

 private:
  std::shared_ptr<PyRef> dataset_;
  std::shared_ptr<PyRef> worker_init_fn_;
  bool seed_samples_;
  std::shared_ptr<Structure> structure_;
  PythonFork fork_;
  std::shared_ptr<PyRef> collate_fn_;          // null: the parent collates
  std::shared_ptr<WorkerCollate> collate_;     // with collate_fn_
  int64_t held_limit_ = 0;
};

// A native dataset in worker processes of a Python program: the library's
// native task (the child calls Get without the GIL, as a worker thread
// would; a Python transform takes it), forked as PythonFork says, since a
// native dataset may hold Python transforms.
class PyNativeWorkerProgram : public extension::NativeWorkerProgram {
 public:
  using NativeWorkerProgram::NativeWorkerProgram;
  void BeforeFork() override { fork_.Before(); }
  void AfterForkInParent() override { fork_.InParent(); }
  // The fork left the child's thread holding the GIL; native code runs
  // without it.
  void AfterForkInChild() override;

 private:
  PythonFork fork_;
};

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PYTHON_WORKER_PROGRAM_H_
