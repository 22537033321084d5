// Conversions between feedline's C++ types and Python objects, shared by the
// binding files: samples and batches to and from numpy arrays, the layout of
// a sample (one array, a tuple, a dict), GIL-safe object references, worker
// info for Python datasets, and the exception mapping.
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

// How a sample or batch is laid out in Python. A tuple or list becomes fields
// "0", "1", ...; a dict, fields named by its keys; anything else, field "0".
// Tuples, lists and dicts nested inside are collated level by level, as
// torch's default_collate does: each leaf is a field named by its path
// (python_support.cc, "Nested samples"), and the batch rebuilds the tree.
// Python datasets reveal it with their first sample; native datasets declare
// it. Once known it never changes.
class Structure {
 public:
  enum Kind : int { kUnknown, kSingle, kTuple, kDict };

  // Sets the layout up front (a native dataset's fields).
  void Declare(Kind kind, std::vector<std::string> names);
  // Records the layout of a sample the first time; afterwards throws
  // SampleError if `kind` (or a tuple's length) differs from the first.
  void Observe(Kind kind, const std::vector<std::string>& names);
  // Lets torch.bfloat16 fields (bfloat16_fields.h) through; without it
  // Observe refuses them. For a loader that delivers torch tensors; call
  // before the first sample.
  void DeliverTorchBFloat16() { torch_bfloat16_ = true; }

  Kind kind() const { return kind_.load(std::memory_order_acquire); }

  // The first sample's skeleton: its containers' types and its leaves'
  // kinds, as feedline/_skeleton.py describes and pickles them, so that a
  // framework adapter can give batches the types its own collate would
  // (a namedtuple stays one, a Python int of an unbatched sample stays an
  // int). The first one recorded wins; empty until then, or if the sample's
  // types cannot be pickled (a class defined inside a function).
  bool has_skeleton() const { return has_skeleton_.load(std::memory_order_acquire); }
  void SetSkeleton(const std::string& pickled);
  std::string skeleton() const;
  // REQUIRES: kind() != kUnknown.
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::mutex mu_;  // serializes the first Observe
  std::atomic<Kind> kind_{kUnknown};
  std::vector<std::string> names_;  // written once, before kind_ is published
  bool nested_ = false;             // likewise: the first sample had nested containers
  bool torch_bfloat16_ = false;     // set before the first Observe
  mutable std::mutex skeleton_mu_;
  std::string skeleton_;  // guarded by skeleton_mu_
  std::atomic<bool> has_skeleton_{false};
};

// The pickled skeleton of `item` (Structure::skeleton), or "" if it cannot
// be pickled. REQUIRES: the GIL. One Python call: made once per loader or
// worker process, not per sample.
std::string DescribeSample(const py::handle& item);

// Writes the arrays and scalars of `item` (a tuple, list, dict, array or
// scalar, with tuples, lists and dicts nested to any depth) as fields through
// `allocate`, converting dtypes numpy has and feedline lacks (float64 -> f32,
// bool -> u8, other integers -> i32 / i64); torch.bfloat16 tensors become
// bfloat16 fields (bfloat16_fields.h); strings and other objects become
// object fields (object_fields.h). Throws SampleError when the layout differs
// from the first sample's.
using AllocateFn = std::function<Tensor(const std::string& name, DType, const Shape&)>;
void FillFields(const py::handle& item, Structure& structure, const AllocateFn& allocate);

// The numpy dtype of a feedline dtype.
py::dtype NumpyDType(DType dtype);
// A new array holding a copy of `tensor`.
py::array CopyToArray(const Tensor& tensor);
// A 1-D int64 array holding a copy of `values`.
py::array ToArray(const std::vector<int64_t>& values);

// A sample as its dataset returned it (copies), for a Python collate_fn.
py::object SampleToPython(const Sample& sample, const Structure& structure);

// The batch laid out as `structure`: a tuple of the named fields followed by
// any others (lengths, offsets, the "replaced" mask), a dict of all fields
// for a dict layout or an unknown one, or a single array; nested tuples and
// dicts as the samples had them. Arrays view the batch slot without copying
// and keep it out of the pool while they live.
py::object ShapeBatch(const Batch& batch, const Structure& structure);

// ("tuple" | "dict" | "single" | "unknown", [names]).
py::object StructureToPython(const Structure& structure);

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
