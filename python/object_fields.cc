#include "python/object_fields.h"

#include <pybind11/numpy.h>

#include <cstring>

#include "feedline/error.h"

namespace feedline::python {
namespace {

py::object Pickle() { return py::module_::import("pickle"); }

// A framework's tensor (torch, paddle) that numpy could not take: complex,
// on a GPU, needing grad, or a paddle bfloat16 (a CPU torch.bfloat16 tensor
// is a bfloat16 field, bfloat16_fields.h). torch's collate stacks it; carried
// as a pickled object it would come back as a list of per-sample tensors,
// which looks like a batch only until it is used. Refused, naming the field.
void RefuseUnconvertibleTensor(const std::string& name, const py::handle& value) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()));
  if (!py::hasattr(type, "__module__") || !py::hasattr(value, "dtype")) return;
  const std::string module = py::str(type.attr("__module__"));
  if (module.rfind("torch", 0) != 0 && module.rfind("paddle", 0) != 0) return;
  const std::string& plain = name;
  const std::string dtype = py::str(value.attr("dtype"));
  throw SampleError(
      FailureKind::kType, "",
      "field '" + plain + "' is a " + std::string(py::str(type.attr("__name__"))) + " of dtype " +
          dtype + " that numpy cannot hold (complex has no numpy dtype and is not supported; "
          "bfloat16 neither, except a CPU torch tensor with feedline.torch.DataLoader; a tensor "
          "on a GPU or needing grad must be moved or detached): return it as float32/float16 "
          "(e.g. .float()), or .cpu().detach() it, in __getitem__");
}

py::object DecodeBytes(const uint8_t* data, size_t size) {
  if (size == 0) throw Error("an object field is empty (its tag is missing)");
  const char tag = static_cast<char>(data[0]);
  const char* payload = reinterpret_cast<const char*>(data + 1);
  const size_t n = size - 1;
  switch (tag) {
    case 's': {
      // Bytes that are not UTF-8 (a native dataset's string column) raise
      // UnicodeDecodeError, never a null object with the error left set.
      PyObject* text = PyUnicode_DecodeUTF8(payload, static_cast<Py_ssize_t>(n), "strict");
      if (text == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(text);
    }
    case 'b':
      return py::bytes(payload, n);
    case 'p':
      return Pickle().attr("loads")(py::bytes(payload, n));
    default:
      throw Error(std::string("an object field has an unknown tag '") + tag + "'");
  }
}

}  // namespace

bool IsObjectValue(const py::handle& value, py::object* numeric) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) || value.is_none()) return true;
  py::array array = py::array::ensure(value);
  if (!array) {
    PyErr_Clear();
    return true;
  }
  const char kind = array.dtype().kind();
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') return true;
  *numeric = std::move(array);
  return false;
}

void FillObjectField(const std::string& name, const py::handle& value,
                     const std::function<Tensor(const std::string&, DType, const Shape&)>& allocate) {
  RefuseUnconvertibleTensor(name, value);
  char tag = 'p';
  py::bytes payload;
  if (PyUnicode_Check(value.ptr())) {
    tag = 's';
    payload = py::reinterpret_steal<py::bytes>(PyUnicode_AsUTF8String(value.ptr()));
    if (!payload) throw py::error_already_set();  // a lone surrogate
  } else if (PyBytes_Check(value.ptr())) {
    tag = 'b';
    payload = py::reinterpret_borrow<py::bytes>(value);
  } else {
    payload = Pickle().attr("dumps")(value, -1);
  }
  char* data = nullptr;
  Py_ssize_t size = 0;
  PyBytes_AsStringAndSize(payload.ptr(), &data, &size);
  Tensor tensor = allocate(name, DType::kU8, Shape{static_cast<int64_t>(size) + 1});
  auto* out = static_cast<uint8_t*>(tensor.raw());
  out[0] = static_cast<uint8_t>(tag);
  if (size > 0) std::memcpy(out + 1, data, static_cast<size_t>(size));
}

py::object DecodeObject(const Tensor& field) {
  return DecodeBytes(static_cast<const uint8_t*>(field.raw()),
                     static_cast<size_t>(field.shape().elements()));
}

py::object DecodeObjectField(const Tensor& field, const Tensor* lengths) {
  if (field.shape().rank() == 1) return DecodeObject(field);
  const int64_t rows = field.shape()[0];
  const int64_t width = field.shape().rank() > 1 ? field.shape()[1] : 0;
  const auto* base = static_cast<const uint8_t*>(field.raw());
  py::list out;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = lengths != nullptr ? lengths->data<int64_t>()[r] : width;
    out.append(DecodeBytes(base + r * width, static_cast<size_t>(n)));
  }
  return out;
}

}  // namespace feedline::python
