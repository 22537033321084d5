#include "python/python_worker_program.h"

#include <stdexcept>

#include "feedline/error.h"
#include "python/fork_safe_point.h"
#include "python/worker_process.h"

namespace feedline::python {
namespace {

// Raises, as a PyInterrupt, a Python exception of type `kind`: the engine
// passes it through to the consumer, whatever the error policy.
[[noreturn]] void ThrowPython(PyObject* kind, const std::string& message) {
  py::gil_scoped_acquire gil;
  PyErr_SetString(kind, message.c_str());
  throw PyInterrupt{py::error_already_set()};
}

}  // namespace

PythonWorkerProgram::PythonWorkerProgram(py::object dataset, py::object worker_init_fn,
                                         bool seed_samples, std::shared_ptr<Structure> structure)
    : dataset_(std::make_shared<PyRef>(std::move(dataset))),
      worker_init_fn_(std::make_shared<PyRef>(std::move(worker_init_fn))),
      seed_samples_(seed_samples),
      structure_(std::move(structure)) {}

void PythonFork::Before() {
  gil_ = PyGILState_Ensure();
  WaitForForkSafePoint();  // fork_safe_point.h: no inherited lock held forever
  // No garbage collection until the child froze what it inherited: a
  // collection there could destroy inherited loader objects, whose
  // destructors would wait on threads and mutexes the fork left behind.
  gc_was_enabled_ = PyGC_Disable();
  PyOS_BeforeFork();
}

void PythonFork::InParent() {
  PyOS_AfterFork_Parent();
  if (gc_was_enabled_) PyGC_Enable();
  PyGILState_Release(gil_);
}

void PythonFork::InChild() {
  PyOS_AfterFork_Child();
  ResetForkSafePointInChild();
  PyObject* gc = PyImport_ImportModule("gc");
  PyObject* frozen = gc != nullptr ? PyObject_CallMethod(gc, "freeze", nullptr) : nullptr;
  if (frozen == nullptr) PyErr_Clear();
  Py_XDECREF(frozen);
  Py_XDECREF(gc);
  if (gc_was_enabled_) PyGC_Enable();
}

void PythonWorkerProgram::BeforeFork() { fork_.Before(); }
void PythonWorkerProgram::AfterForkInParent() { fork_.InParent(); }
void PythonWorkerProgram::AfterForkInChild() { fork_.InChild(); }

std::unique_ptr<extension::WorkerTask> PythonWorkerProgram::MakeTask(
    const extension::WorkerTaskInfo& info) {
  return MakePythonWorkerTask(
      info, PythonWorkerConfig{dataset_, worker_init_fn_, seed_samples_,
                               structure_->carries_whole(), collate_fn_, held_limit_});
}

void PythonWorkerProgram::CollateInWorkers(py::object collate_fn,
                                           std::shared_ptr<WorkerCollate> parent,
                                           int64_t held_limit) {
  collate_fn_ = std::make_shared<PyRef>(std::move(collate_fn));
  collate_ = std::move(parent);
  held_limit_ = held_limit;
}

void PythonWorkerProgram::OnSampleReply(int worker, int64_t process, const Sample* out) const {
  if (collate_) collate_->Record(worker, process, out);
}

void PyNativeWorkerProgram::AfterForkInChild() {
  fork_.InChild();
  PyEval_SaveThread();
}

void PythonWorkerProgram::CheckSchema(const SampleSchema& schema) const {
  structure_->Observe(schema);  // never a collated batch's (worker_collate.h)
}

void PythonWorkerProgram::RaiseError(const extension::ErrorReply& error, int64_t index) const {
  // What a worker process's code raised that is not an Exception (or a
  // MemoryError) passes through the loader as it does with thread workers.
  if (error.cause == extension::ErrorCause::kInterrupt) {
    const std::string& type = error.origin.exception_type;
    PyObject* kind = type == "SystemExit"      ? PyExc_SystemExit
                     : type == "GeneratorExit" ? PyExc_GeneratorExit
                     : type == "MemoryError"   ? PyExc_MemoryError
                                               : PyExc_KeyboardInterrupt;
    ThrowPython(kind, error.message);
  }
  WorkerProgram::RaiseError(error, index);
}

void PythonWorkerProgram::RaiseStreamDeath(int worker, const extension::WorkerDeath& death) const {
  ThrowPython(PyExc_RuntimeError,
              extension::StreamDeathMessage(worker, death) +
                  ", so this epoch ends here (the batches already delivered stand; the next "
                  "epoch starts a fresh worker)");
}

}  // namespace feedline::python
