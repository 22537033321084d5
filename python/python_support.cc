#include "python/python_support.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "python/object_fields.h"

namespace feedline::python {
namespace {

thread_local const WorkerInfoScope* current_worker = nullptr;
// Loaders whose code this thread runs (nested loaders are allowed), and
// whether one of them was used from it.
thread_local std::vector<const void*> running_loaders;
thread_local bool misuse_seen = false;
std::atomic<unsigned long> main_thread{0};

// The feedline dtype a numpy array is stored as, or false if none fits.
bool ChooseDType(const py::dtype& dtype, DType* out) {
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  switch (kind) {
    case 'b':
      *out = DType::kU8;
      return true;
    case 'u':
      *out = size == 1 ? DType::kU8 : (size == 2 ? DType::kI32 : DType::kI64);
      return true;
    case 'i':
      *out = size <= 4 ? DType::kI32 : DType::kI64;
      return true;
    case 'f':
      *out = size == 2 ? DType::kF16 : DType::kF32;
      return true;
    default:
      return false;
  }
}

// `array` is a field's value as a numeric numpy array (IsObjectValue
// converted it and sent everything else to FillObjectField).
void FillField(const std::string& name, py::array array, const AllocateFn& allocate) {
  DType dtype;
  if (!ChooseDType(array.dtype(), &dtype)) {
    throw Error("field '" + name + "' has dtype " + std::string(py::str(array.dtype())) +
                ", which is not numeric");
  }
  const bool value_dtype_is_u64 = array.dtype().kind() == 'u' && array.dtype().itemsize() == 8;
  // Converts and makes contiguous only when needed.
  py::dtype target = NumpyDType(dtype);
  if (!array.dtype().is(target) && !array.dtype().equal(target)) {
    array = py::reinterpret_steal<py::array>(py::detail::npy_api::get().PyArray_FromAny_(
        array.ptr(), target.release().ptr(), 0, 0,
        py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_FORCECAST_,
        nullptr));
    if (!array) throw py::error_already_set();
  } else if (!(array.flags() & py::array::c_style)) {
    array = py::array::ensure(array, py::array::c_style);
  }
  if (array.ndim() > Shape::kMaxRank) {
    throw SampleError("type", "",
                      "field '" + name + "' has " + std::to_string(array.ndim()) +
                          " dimensions; at most " + std::to_string(Shape::kMaxRank) +
                          " are supported");
  }
  if (value_dtype_is_u64 && array.size() > 0) {
    // Stored as int64: a value past its range would come back negative.
    const auto* values = static_cast<const int64_t*>(array.data());
    for (py::ssize_t i = 0; i < array.size(); ++i) {
      if (values[i] < 0) {
        throw SampleError("type", "",
                          "field '" + name + "' holds the uint64 value " +
                              std::to_string(static_cast<uint64_t>(values[i])) +
                              ", above the int64 range that feedline stores integers in");
      }
    }
  }
  Shape shape;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) shape.push_back(array.shape(d));
  Tensor tensor = allocate(name, dtype, shape);
  if (tensor.bytes() > 0) std::memcpy(tensor.raw(), array.data(), tensor.bytes());
}

std::vector<py::ssize_t> Dims(const Tensor& tensor) {
  return std::vector<py::ssize_t>(tensor.shape().begin(), tensor.shape().end());
}

py::array ViewArray(const Tensor& tensor, const py::handle& owner) {
  if (tensor.raw() == nullptr) return CopyToArray(tensor);  // empty: nothing to view
  return py::array(NumpyDType(tensor.dtype()), Dims(tensor), std::vector<py::ssize_t>{},
                   tensor.raw(), owner);
}

const char* KindName(Structure::Kind kind) {
  switch (kind) {
    case Structure::kSingle:
      return "single";
    case Structure::kTuple:
      return "tuple";
    case Structure::kDict:
      return "dict";
    default:
      return "unknown";
  }
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

void CheckNotInsideLoader(const void* key, const char* what) {
  if (key == nullptr ||
      std::find(running_loaders.begin(), running_loaders.end(), key) == running_loaders.end()) {
    return;
  }
  misuse_seen = true;
  PyErr_Format(PyExc_RuntimeError,
               "DataLoader.%s was called from the loader's own dataset, collate_fn or "
               "worker_init_fn; a loader cannot be used from code it runs (it would wait for "
               "itself)",
               what);
  throw py::error_already_set();
}

void Structure::Declare(Kind kind, std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(mu_);
  names_ = std::move(names);
  kind_.store(kind, std::memory_order_release);
}

void Structure::Observe(Kind kind, const std::vector<std::string>& names) {
  Kind known = this->kind();
  if (known == kUnknown) {
    std::lock_guard<std::mutex> lock(mu_);
    known = kind_.load(std::memory_order_relaxed);
    if (known == kUnknown) {
      names_ = names;
      kind_.store(kind, std::memory_order_release);
      return;
    }
  }
  if (known != kind || (kind == kTuple && names.size() != names_.size())) {
    auto describe = [](Kind k, size_t n) {
      return k == kTuple ? "a tuple of " + std::to_string(n) : std::string(KindName(k));
    };
    throw SampleError("type", "",
                      "the sample is " + describe(kind, names.size()) +
                          " but the first sample was " + describe(known, names_.size()));
  }
  // A field that is an object in one sample and an array in another.
  auto what = [](const std::string& name) {
    return IsObjectFieldName(name) ? "an object (not a numeric array)" : "a numeric array";
  };
  if (kind == kTuple) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (IsObjectFieldName(names[i]) != IsObjectFieldName(names_[i])) {
        throw SampleError("type", "",
                          "element " + std::to_string(i) + " of the sample is " + what(names[i]) +
                              " but in the first sample it was " + what(names_[i]));
      }
    }
  } else if (kind == kDict) {
    for (const std::string& name : names) {
      std::string plain = name;
      const bool object = IsObjectFieldName(name, &plain);
      const std::string other = object ? plain : ObjectFieldName(name);
      if (std::find(names_.begin(), names_.end(), other) != names_.end()) {
        throw SampleError("type", "",
                          "key '" + plain + "' of the sample is " + what(name) +
                              " but in the first sample it was " + what(other));
      }
    }
  }
}

void FillFields(const py::handle& item, Structure& structure, const AllocateFn& allocate) {
  // An object field's name carries a marker (object_fields.h), so a field
  // that changes between an array and an object changes the layout.
  std::vector<std::string> names;
  std::vector<py::handle> values;
  Structure::Kind kind = Structure::kSingle;
  if (PyTuple_Check(item.ptr()) || PyList_Check(item.ptr())) {
    kind = Structure::kTuple;
    auto sequence = py::reinterpret_borrow<py::sequence>(item);
    for (size_t i = 0; i < sequence.size(); ++i) {
      names.push_back(std::to_string(i));
      values.push_back(sequence[i]);
    }
  } else if (PyDict_Check(item.ptr())) {
    kind = Structure::kDict;
    for (auto entry : py::reinterpret_borrow<py::dict>(item)) {
      names.push_back(py::str(entry.first));
      values.push_back(entry.second);
    }
  } else {
    names.push_back("0");
    values.push_back(item);
  }
  std::vector<py::object> arrays(values.size());  // null for object fields
  for (size_t i = 0; i < values.size(); ++i) {
    if (IsObjectValue(values[i], &arrays[i])) names[i] = ObjectFieldName(names[i]);
  }
  structure.Observe(kind, names);
  for (size_t i = 0; i < values.size(); ++i) {
    if (arrays[i]) {
      FillField(names[i], py::reinterpret_steal<py::array>(arrays[i].release()), allocate);
    } else {
      FillObjectField(names[i], values[i], allocate);
    }
  }
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
  }
  throw Error("unknown dtype");
}

py::array CopyToArray(const Tensor& tensor) {
  py::array out(NumpyDType(tensor.dtype()), Dims(tensor));
  if (tensor.bytes() > 0) std::memcpy(out.mutable_data(), tensor.raw(), tensor.bytes());
  return out;
}

py::array ToArray(const std::vector<int64_t>& values) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(values.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * 8);
  return out;
}

py::object SampleToPython(const Sample& sample, const Structure& structure) {
  auto field = [&](const std::string& name) -> py::object {
    const Tensor* tensor = sample.Find(name);
    if (tensor == nullptr) throw Error("the sample has no field '" + name + "'");
    if (IsObjectFieldName(name)) return DecodeObject(*tensor);
    py::array array = CopyToArray(*tensor);
    // A scalar goes to Python as a numpy scalar, as the dataset gave it.
    if (tensor->shape().rank() == 0) return array[py::tuple()];
    return array;
  };
  switch (structure.kind()) {
    case Structure::kSingle:
      return field(structure.names()[0]);
    case Structure::kTuple: {
      py::tuple out(structure.names().size());
      for (size_t i = 0; i < structure.names().size(); ++i) out[i] = field(structure.names()[i]);
      return out;
    }
    default: {
      py::dict out;
      for (int i = 0; i < sample.num_fields(); ++i) {
        std::string key = sample.field_name(i);
        IsObjectFieldName(key, &key);
        out[py::str(key)] = field(sample.field_name(i));
      }
      return out;
    }
  }
}

py::object ShapeBatch(const Batch& batch, const Structure& structure) {
  // One capsule owns a copy of the handle; every array keeps it alive.
  py::capsule owner(new Batch(batch), [](void* p) { delete static_cast<Batch*>(p); });
  const int n = batch.num_fields();
  auto find = [&](const std::string& name) {
    int i = 0;
    while (i < n && batch.field_name(i) != name) ++i;
    return i;
  };
  // Object fields become lists of objects; their "_lengths" field is theirs
  // alone and is not shown.
  std::vector<bool> used(static_cast<size_t>(n), false);
  std::vector<int> lengths_of(static_cast<size_t>(n), n);  // an object field's lengths
  for (int i = 0; i < n; ++i) {
    if (!IsObjectFieldName(batch.field_name(i))) continue;
    lengths_of[static_cast<size_t>(i)] = find(batch.field_name(i) + "_lengths");
    if (lengths_of[static_cast<size_t>(i)] < n) used[static_cast<size_t>(lengths_of[i])] = true;
  }
  auto value = [&](int i) -> py::object {
    if (!IsObjectFieldName(batch.field_name(i))) return ViewArray(batch.field(i), owner);
    const int lengths = lengths_of[static_cast<size_t>(i)];
    return DecodeObjectField(batch.field(i), lengths < n ? &batch.field(lengths) : nullptr);
  };
  const Structure::Kind kind = structure.kind();
  if (kind == Structure::kUnknown || kind == Structure::kDict) {
    py::dict out;
    for (int i = 0; i < n; ++i) {
      if (used[static_cast<size_t>(i)]) continue;  // an object field's lengths
      std::string key = batch.field_name(i);
      IsObjectFieldName(key, &key);
      out[py::str(key)] = value(i);
    }
    return out;
  }
  const std::vector<std::string>& names = structure.names();
  py::list out;
  for (const std::string& name : names) {
    const int i = find(name);
    if (i == n) throw Error("the batch has no field '" + name + "'");
    used[static_cast<size_t>(i)] = true;
    out.append(value(i));
  }
  for (int i = 0; i < n; ++i) {
    if (!used[static_cast<size_t>(i)]) out.append(ViewArray(batch.field(i), owner));
  }
  if (kind == Structure::kSingle && out.size() == 1) return out[0];
  return py::tuple(out);
}

py::object StructureToPython(const Structure& structure) {
  const Structure::Kind kind = structure.kind();
  py::list names;
  if (kind != Structure::kUnknown) {
    for (const std::string& name : structure.names()) names.append(name);
  }
  return py::make_tuple(KindName(kind), names);
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

void RegisterExceptions(py::module_& m) {
  // Leaked on purpose: the types must outlive every translation.
  static py::handle sample_error =
      py::exception<SampleError>(m, "SampleError", PyExc_RuntimeError).inc_ref();
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
      PyErr_SetObject(type.ptr(), error.ptr());
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TimeoutError& e) {
      raise(timeout_error, e);
    } catch (const SampleError& e) {
      raise(sample_error, e);
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

}  // namespace feedline::python
