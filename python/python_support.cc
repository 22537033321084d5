#include "python/python_support.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "feedline/error.h"

namespace feedline::python {
namespace {

thread_local const WorkerInfoScope* current_worker = nullptr;
// Loaders whose code this thread runs (nested loaders are allowed), and
// whether one of them was used from it.
thread_local std::vector<const void*> running_loaders;
thread_local bool misuse_seen = false;
std::atomic<unsigned long> main_thread{0};

std::vector<py::ssize_t> Dims(const Tensor& tensor) {
  return std::vector<py::ssize_t>(tensor.shape().begin(), tensor.shape().end());
}

}  // namespace

PyRef::~PyRef() {
  if (!Py_IsInitialized()) {
    object_.release();  // the interpreter is gone; nothing to give back
    return;
  }
  py::gil_scoped_acquire gil;
  object_ = py::object();
}

void GilRelease::SetMainThread() {
  main_thread.store(
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>());
}

GilRelease::~GilRelease() noexcept(false) {
  if (_Py_IsFinalizing() && PyThread_get_thread_ident() != main_thread.load()) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  PyEval_RestoreThread(state_);
}

LoaderCodeScope::LoaderCodeScope(const void* key) : key_(key), previous_misuse_(misuse_seen) {
  running_loaders.push_back(key);
  misuse_seen = false;
}

LoaderCodeScope::~LoaderCodeScope() {
  running_loaders.pop_back();
  misuse_seen = previous_misuse_;
}

bool LoaderCodeScope::misuse() const { return misuse_seen; }

bool InsideLoader(const void* key) {
  return key != nullptr &&
         std::find(running_loaders.begin(), running_loaders.end(), key) != running_loaders.end();
}

void CheckNotInsideLoader(const void* key, const char* what) {
  if (!InsideLoader(key)) return;
  misuse_seen = true;
  PyErr_Format(PyExc_RuntimeError,
               "DataLoader.%s was called from the loader's own dataset, collate_fn or "
               "worker_init_fn; a loader cannot be used from code it runs (it would wait for "
               "itself)",
               what);
  throw py::error_already_set();
}

py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case DType::kU8:
      return py::dtype::of<uint8_t>();
    case DType::kI32:
      return py::dtype::of<int32_t>();
    case DType::kI64:
      return py::dtype::of<int64_t>();
    case DType::kF16:
      return py::dtype("float16");
    case DType::kF32:
      return py::dtype::of<float>();
    case DType::kBool:
      return py::dtype::of<bool>();
    case DType::kF64:
      return py::dtype::of<double>();
    case DType::kI8:
      return py::dtype::of<int8_t>();
    case DType::kI16:
      return py::dtype::of<int16_t>();
    case DType::kU16:
      return py::dtype::of<uint16_t>();
  }
  throw Error("unknown dtype");
}

py::array CopyToArray(const Tensor& tensor) {
  py::array out(NumpyDType(tensor.dtype()), Dims(tensor));
  if (tensor.bytes() > 0) std::memcpy(out.mutable_data(), tensor.raw(), tensor.bytes());
  return out;
}

py::capsule BatchOwner(const Batch& batch) {
  return py::capsule(new Batch(batch), [](void* p) { delete static_cast<Batch*>(p); });
}

py::array ViewArray(const Tensor& tensor, const py::handle& owner) {
  if (tensor.raw() == nullptr) return CopyToArray(tensor);  // empty: nothing to view
  return py::array(NumpyDType(tensor.dtype()), Dims(tensor), std::vector<py::ssize_t>{},
                   tensor.raw(), owner);
}

py::array ToArray(const std::vector<int64_t>& values) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * 8);
  return out;
}

namespace {

// "KeyError", "mypkg.errors.Outer.BadRecord"; empty for a type without the
// usual attributes.
std::string QualifiedTypeName(py::handle type) {
  try {
    const std::string module = py::str(type.attr("__module__"));
    const std::string qualname = py::str(type.attr("__qualname__"));
    return module == "builtins" ? qualname : module + "." + qualname;
  } catch (py::error_already_set&) {
    return std::string();
  }
}

}  // namespace

std::string PythonErrorText(py::error_already_set& e) {
  std::string text = e.what();
  try {
    const std::string name = py::str(e.type().attr("__name__"));
    const std::string qualified = QualifiedTypeName(e.type());
    if (!qualified.empty() && text.compare(0, name.size(), name) == 0) {
      text = qualified + text.substr(name.size());
    }
  } catch (py::error_already_set&) {
    // A type without the usual attributes: its text as pybind11 gave it.
  }
  return text;
}

FailureOrigin PythonErrorOrigin(py::error_already_set& e) {
  FailureOrigin origin;
  origin.exception_type = QualifiedTypeName(e.type());
  return origin;
}

WorkerInfoScope::WorkerInfoScope(int worker_id, int num_workers, uint64_t seed, int64_t epoch,
                                 std::shared_ptr<PyRef> dataset)
    : worker_id(num_workers == 0 ? -1 : worker_id),
      num_workers(num_workers),
      seed(seed),
      epoch(epoch),
      dataset(std::move(dataset)),
      previous_(current_worker) {
  current_worker = this;
}

WorkerInfoScope::~WorkerInfoScope() { current_worker = previous_; }

py::object CurrentWorkerInfo() {
  const WorkerInfoScope* info = current_worker;
  if (info == nullptr || info->worker_id < 0) return py::none();
  return py::dict(py::arg("id") = info->worker_id, py::arg("num_workers") = info->num_workers,
                  py::arg("seed") = info->seed, py::arg("epoch") = info->epoch,
                  py::arg("dataset") = info->dataset->get());
}

py::object RowLoader(const py::handle& dataset) {
  return py::module_::import("feedline._rows").attr("row_loader")(dataset);
}

void RegisterExceptions(py::module_& m) {
  // Leaked on purpose: the types must outlive every translation.
  static py::handle sample_error =
      py::exception<SampleError>(m, "SampleError", PyExc_RuntimeError).inc_ref();
  static py::handle worker_init_error =
      py::exception<WorkerInitError>(m, "WorkerInitError", PyExc_RuntimeError).inc_ref();
  // Both `except feedline.SampleError` and `except TimeoutError` catch it.
  static py::handle timeout_error = [&] {
    py::tuple bases = py::make_tuple(py::reinterpret_borrow<py::object>(sample_error),
                                     py::reinterpret_borrow<py::object>(PyExc_TimeoutError));
    PyObject* type = PyErr_NewException("feedline._feedline.TimeoutError", bases.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    m.add_object("TimeoutError", py::handle(type));
    return py::handle(type);
  }();
  py::register_exception_translator([](std::exception_ptr p) {
    auto raise = [](py::handle type, const SampleError& e) {
      py::object error = py::reinterpret_borrow<py::object>(type)(e.what());
      error.attr("index") = e.index();
      error.attr("source") = e.source();
      error.attr("reason") = e.reason();
      error.attr("message") = e.message();
      // The facts a front end needs, as data (FailureOrigin): the type of
      // the dataset's exception; the worker process that died, its signal.
      const FailureOrigin& origin = e.origin();
      error.attr("exception_type") =
          origin.exception_type.empty() ? py::none() : py::cast(origin.exception_type);
      error.attr("worker_pid") = origin.worker_pid >= 0 ? py::cast(origin.worker_pid) : py::none();
      error.attr("signal") = origin.signal > 0 ? py::cast(origin.signal) : py::none();
      PyErr_SetObject(type.ptr(), error.ptr());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TimeoutError& e) {
      raise(timeout_error, e);
    } catch (const SampleError& e) {
      raise(sample_error, e);
    } catch (const WorkerInitError& e) {
      PyErr_SetString(worker_init_error.ptr(), e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const OsError& e) {
      // OSError(errno, message, filename): Python makes it the subclass
      // for the number (FileNotFoundError, PermissionError, ...).
      py::object error = py::reinterpret_borrow<py::object>(PyExc_OSError)(
          e.error_number(), e.what(), e.path());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

}  // namespace feedline::python
