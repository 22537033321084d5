// Conversions between feedline's C++ types and Python objects, shared by the
// binding files: tensors to numpy arrays, GIL-safe object references, worker
// info for Python datasets, and the exception mapping. Samples and batches
// by their schema: sample_structure.h.
//
// Thread safety: functions taking py:: objects REQUIRE the GIL. Structure is
// safe to use from several threads at once.
#ifndef FEEDLINE_PYTHON_PYTHON_SUPPORT_H_
#define FEEDLINE_PYTHON_PYTHON_SUPPORT_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "feedline/batch.h"
#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/tensor.h"
#include "python/sample_structure.h"

namespace feedline::python {

namespace py = pybind11;

// A reference to a Python object that any thread may drop: the engine
// destroys datasets, samplers and callbacks on its own threads, where the GIL
// is not held.
class PyRef {
 public:
  explicit PyRef(py::object object) : object_(std::move(object)) {}
  ~PyRef();
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;

  // REQUIRES: the GIL.
  const py::object& get() const { return object_; }

 private:
  py::object object_;
};

// Releases the GIL for its scope, like py::gil_scoped_release, for a thread
// that waits on the engine. If the interpreter began to shut down meanwhile,
// a thread other than the main one cannot take the GIL back: CPython would end
// it with pthread_exit inside the destructor, which C++ turns into
// std::terminate. Such a thread is parked instead until the process exits.
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  ~GilRelease() noexcept(false);
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

  // Records the calling thread as the main thread. Call once at import.
  static void SetMainThread();

 private:
  PyThreadState* state_;
};

// The numpy dtype of a feedline dtype.
py::dtype NumpyDType(DType dtype);
// A new array holding a copy of `tensor`.
py::array CopyToArray(const Tensor& tensor);
// A capsule owning a copy of `batch`'s handle: the arrays that view the
// batch (ViewArray) keep its slot while any of them lives.
py::capsule BatchOwner(const Batch& batch);
// An array over `tensor`'s memory, kept alive by `owner`; a copy if the
// tensor is empty (no memory to view).
py::array ViewArray(const Tensor& tensor, const py::handle& owner);
// A 1-D int64 array holding a copy of `values`.
py::array ToArray(const std::vector<int64_t>& values);

// Sets what feedline.io.get_worker_info() reports on this thread while a
// Python dataset runs; worker_id -1 (or num_workers 0) reports None.
class WorkerInfoScope {
 public:
  WorkerInfoScope(int worker_id, int num_workers, uint64_t seed, int64_t epoch,
                  std::shared_ptr<PyRef> dataset);
  ~WorkerInfoScope();
  WorkerInfoScope(const WorkerInfoScope&) = delete;
  WorkerInfoScope& operator=(const WorkerInfoScope&) = delete;

  int worker_id;
  int num_workers;
  uint64_t seed;
  int64_t epoch;
  std::shared_ptr<PyRef> dataset;

 private:
  const WorkerInfoScope* previous_;
};
// A dict (id, num_workers, seed, epoch, dataset), or None outside a worker.
py::object CurrentWorkerInfo();

// The callable that loads one row of a Python map-style dataset: its
// __getitem__, or __getitems__([index])'s sample for a dataset that has only
// __getitems__, as torch's DataLoader loads it (feedline/_rows.py).
py::object RowLoader(const py::handle& dataset);

// A Python exception that is not an Exception: KeyboardInterrupt, SystemExit,
// GeneratorExit. It is never a sample error. Deliberately not a
// std::exception, so that the engine does not take it for a failed sample: it
// ends the epoch and the consumer's Next() rethrows it, and PyLoader raises
// the original Python exception again.
struct PyInterrupt {
  py::error_already_set error;
};

// True for a Python exception that must pass through as it is (see
// PyInterrupt): one that is not an Exception, and MemoryError, which like
// std::bad_alloc stops the epoch whatever the error policy.
inline bool IsInterrupt(const py::error_already_set& e) {
  return !e.matches(PyExc_Exception) || e.matches(PyExc_MemoryError);
}

// The text of a Python exception as it crosses the engine: pybind11's
// "<Type>: <value>" and traceback, with the type qualified by its module
// unless it is a builtin ("KeyError: 'x'", "mypkg.errors.BadRecord: ...").
std::string PythonErrorText(py::error_already_set& e);
// The exception's type as data (FailureOrigin::exception_type, qualified as
// above), so that a framework adapter can raise the same type again
// (feedline.torch re-raises the dataset's own exception, as torch does)
// without reading it back out of the text.
FailureOrigin PythonErrorOrigin(py::error_already_set& e);

// Runs `f`, turning a Python exception into std::runtime_error("<what> raised
// <exception>") so that it can cross engine threads; interrupts become
// PyInterrupt.
template <typename F>
auto CallPython(F&& f, const char* what) -> decltype(f()) {
  try {
    return f();
  } catch (py::error_already_set& e) {
    if (IsInterrupt(e)) throw PyInterrupt{std::move(e)};
    throw std::runtime_error(std::string(what) + " raised " + PythonErrorText(e));
  }
}

// Marks the calling thread as running Python code for the loader identified
// by `key` (its sample Structure) for its scope: a dataset's __getitem__ or
// __iter__, a collate_fn. A loader used from such code
// would wait for itself (Next, iteration) or join the thread it runs on
// (close); CheckNotInsideLoader refuses that with a RuntimeError, which then
// passes through the loader as it is, whatever the error policy.
class LoaderCodeScope {
 public:
  explicit LoaderCodeScope(const void* key);
  ~LoaderCodeScope();
  LoaderCodeScope(const LoaderCodeScope&) = delete;
  LoaderCodeScope& operator=(const LoaderCodeScope&) = delete;

  // True once CheckNotInsideLoader refused a call in this scope; the
  // exception the code raised is then a PyInterrupt, not a sample error.
  bool misuse() const;

 private:
  const void* key_;
  bool previous_misuse_;
};
// True if the calling thread runs code for the loader `key` (inside a
// LoaderCodeScope of it).
bool InsideLoader(const void* key);
// Throws py::error_already_set (RuntimeError) if the calling thread runs code
// for the loader `key`. `what` names the call ("close()").
void CheckNotInsideLoader(const void* key, const char* what);

// Runs `f`; a PyInterrupt coming out of it is raised again as the Python
// exception it carries. REQUIRES: the GIL (f may release it).
template <typename F>
auto RaisingInterrupts(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (PyInterrupt& interrupt) {
    interrupt.error.restore();
    throw py::error_already_set();
  }
}

// Error -> ValueError, IndexError -> IndexError, SampleError ->
// feedline.SampleError (a RuntimeError with index, source and reason),
// TimeoutError -> feedline.TimeoutError (a feedline.SampleError and a
// built-in TimeoutError).
void RegisterExceptions(py::module_& m);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PYTHON_SUPPORT_H_
