#include "python/process_dataset.h"

#include <stdexcept>

#include "feedline/error.h"
#include "python/fork_safe_point.h"
#include "python/worker_process.h"

namespace feedline::python {
namespace {

using internal::ProcessWorkers;
using internal::RequestKind;
using internal::WorkerDeath;
using internal::WorkRequest;

// Raises, as a PyInterrupt, a Python exception of type `kind`: the engine
// passes it through to the consumer, whatever the error policy.
[[noreturn]] void ThrowPython(PyObject* kind, const std::string& message) {
  py::gil_scoped_acquire gil;
  PyErr_SetString(kind, message.c_str());
  throw PyInterrupt{py::error_already_set()};
}

// One worker's pass over its copy of an IterableDataset.
class ProcessStream : public SampleStream {
 public:
  ProcessStream(std::shared_ptr<ProcessWorkers> workers, int worker)
      : workers_(std::move(workers)), worker_(worker) {}

  bool Next(Sample& out, SampleContext& ctx) override {
    WorkRequest request;
    request.kind = static_cast<uint32_t>(RequestKind::kNext);
    request.index = ctx.index();
    request.epoch = ctx.epoch();
    request.seed = ctx.seed();
    request.context_index = ctx.index();
    WorkerDeath death;
    switch (workers_->Exchange(worker_, request, &out, &ctx, &death)) {
      case ProcessWorkers::Outcome::kSample: return true;
      case ProcessWorkers::Outcome::kEnd:
      case ProcessWorkers::Outcome::kClosing: return false;  // the loader is closing
      case ProcessWorkers::Outcome::kDied: Died(death);
      case ProcessWorkers::Outcome::kReady: break;
    }
    throw Error("the worker process answered an item request with no item");
  }

  [[noreturn]] void Died(const WorkerDeath& death) const {
    ThrowPython(PyExc_RuntimeError,
                "DataLoader worker process " + std::to_string(worker_) +
                    " of the IterableDataset " + death.Describe() +
                    "; its iterator cannot be replayed, so this epoch ends here (the batches "
                    "already delivered stand; the next epoch starts a fresh worker)");
  }

 private:
  std::shared_ptr<ProcessWorkers> workers_;
  int worker_;
};

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

void PythonWorkerProgram::RunChild(const internal::WorkerChannel& channel) {
  RunWorkerProcess(channel, PythonWorkerConfig{dataset_, worker_init_fn_, seed_samples_});
}

void PyNativeWorkerProgram::RunChild(const internal::WorkerChannel& channel) {
  // The fork left this thread holding the GIL; native code runs without it.
  PyEval_SaveThread();
  NativeWorkerProgram::RunChild(channel);
}

void PythonWorkerProgram::CheckReply(const internal::SampleReply& reply) const {
  structure_->Observe(reply.schema);
}

void PythonWorkerProgram::RaiseError(const internal::ErrorReply& error, int64_t index) const {
  // What a worker process's code raised that is not an Exception (or a
  // MemoryError) passes through the loader as it does with thread workers.
  if (error.cause == internal::ErrorCause::kInterrupt) {
    const std::string& type = error.origin.exception_type;
    PyObject* kind = type == "SystemExit"      ? PyExc_SystemExit
                     : type == "GeneratorExit" ? PyExc_GeneratorExit
                     : type == "MemoryError"   ? PyExc_MemoryError
                                               : PyExc_KeyboardInterrupt;
    ThrowPython(kind, error.message);
  }
  WorkerProgram::RaiseError(error, index);
}

std::shared_ptr<ProcessWorkers> MakePythonWorkers(py::object dataset, py::object worker_init_fn,
                                                  bool seed_samples,
                                                  internal::ProcessWorkerOptions options,
                                                  std::shared_ptr<Structure> structure) {
  auto program = std::make_shared<PythonWorkerProgram>(
      std::move(dataset), std::move(worker_init_fn), seed_samples, std::move(structure));
  return std::make_shared<ProcessWorkers>(std::move(program), options);
}

PyProcessDataset::PyProcessDataset(std::shared_ptr<ProcessWorkers> workers, py::object dataset)
    : ProcessDataset(std::move(workers), static_cast<int64_t>(py::len(dataset))),
      dataset_(std::make_shared<PyRef>(std::move(dataset))) {}

std::string PyProcessDataset::Source(int64_t index) const {
  py::gil_scoped_acquire gil;
  try {
    if (py::hasattr(dataset_->get(), "source")) {
      return py::str(dataset_->get().attr("source")(index));
    }
  } catch (py::error_already_set&) {
    // A source is a courtesy for messages; its failure must not hide the error.
  }
  return {};
}

PyProcessIterableDataset::PyProcessIterableDataset(std::shared_ptr<ProcessWorkers> workers)
    : workers_(std::move(workers)) {}

std::unique_ptr<SampleStream> PyProcessIterableDataset::Open(int worker_id, int num_workers,
                                                             int64_t epoch) const {
  (void)num_workers;  // the processes know it
  WorkRequest request;
  request.kind = static_cast<uint32_t>(RequestKind::kOpen);
  request.index = worker_id;
  request.epoch = epoch;
  request.seed = workers_->options().seed;
  WorkerDeath death;
  ProcessWorkers::Outcome outcome;
  try {
    outcome = workers_->Exchange(worker_id, request, nullptr, nullptr, &death);
  } catch (const SampleError& e) {
    throw SampleError(e.kind(), e.source(), "iter(dataset) raised " + e.message(), -1, e.origin());
  }
  auto stream = std::make_unique<ProcessStream>(workers_, worker_id);
  if (outcome == ProcessWorkers::Outcome::kDied) stream->Died(death);
  return stream;  // on kClosing its first Next ends the pass
}


}  // namespace feedline::python
