#include "python/pickled_fields.h"

#include <pybind11/numpy.h>

#include <cstring>
#include <string>

#include "feedline/error.h"

namespace feedline::python {
namespace {

std::string BufferField(size_t i) { return "buffer" + std::to_string(i); }

// feedline._pickling's function `name`, looked up once into `*slot` (a
// module import and an attribute lookup per sample would cost as much as a
// small sample's pickling) and kept until the interpreter ends. No C++
// static guard: the import may release the GIL, and a thread waiting on a
// guard while holding the GIL would deadlock; under the GIL, a thread that
// finds the slot set by another while it imported keeps the other's.
py::handle PicklingFunction(PyObject** slot, const char* name) {
  if (*slot == nullptr) {
    py::object function = py::module_::import("feedline._pickling").attr(name);
    if (*slot == nullptr) *slot = function.release().ptr();
  }
  return *slot;
}

PyObject* dumps_function = nullptr;  // GUARDED_BY(the GIL)
PyObject* loads_function = nullptr;  // GUARDED_BY(the GIL)

void FillBytes(const std::string& name, const py::buffer_info& bytes, const AllocateFn& allocate) {
  const auto size = static_cast<int64_t>(bytes.size * bytes.itemsize);
  Tensor field = allocate(name, DType::kU8, Shape{size});
  if (size > 0) std::memcpy(field.raw(), bytes.ptr, static_cast<size_t>(size));
}

// Checks that `fields` are a stream named `stream_name` and its buffers.
void CheckLayout(const Sample& fields, const std::string& stream_name) {
  const int n = fields.num_fields();
  bool ok = n >= 1 && fields.field_name(0) == stream_name;
  for (int i = 0; ok && i < n; ++i) {
    ok = fields.field(i).dtype() == DType::kU8 && fields.field(i).shape().rank() == 1 &&
         (i == 0 || fields.field_name(i) == BufferField(static_cast<size_t>(i - 1)));
  }
  if (!ok) throw Error("a pickled " + stream_name + " arrived with malformed fields");
}

py::object Load(const Sample& fields, const std::string& stream_name, const py::list& buffers) {
  const Tensor& stream = fields.field(0);
  py::object view =
      py::memoryview::from_memory(stream.raw(), static_cast<py::ssize_t>(stream.bytes()));
  return PicklingFunction(&loads_function, "loads")(view, buffers);
}

}  // namespace

void FillPickledFields(const py::handle& value, const std::string& stream_name,
                       const AllocateFn& allocate) {
  py::tuple pickled = PicklingFunction(&dumps_function, "dumps")(value);
  FillBytes(stream_name, py::reinterpret_borrow<py::buffer>(pickled[0]).request(), allocate);
  size_t i = 0;
  for (py::handle buffer : py::reinterpret_borrow<py::list>(pickled[1])) {
    FillBytes(BufferField(i++), py::reinterpret_borrow<py::buffer>(buffer).request(), allocate);
  }
}

py::object LoadPickledCopy(const Sample& fields, const std::string& stream_name) {
  CheckLayout(fields, stream_name);
  py::list buffers;
  for (int i = 1; i < fields.num_fields(); ++i) {
    const Tensor& buffer = fields.field(i);
    // A bytearray: writable, so that a tensor made over it (torch.from_numpy)
    // may be written to, as the dataset's own could.
    PyObject* copy = PyByteArray_FromStringAndSize(static_cast<const char*>(buffer.raw()),
                                                   static_cast<py::ssize_t>(buffer.bytes()));
    if (copy == nullptr) throw py::error_already_set();
    buffers.append(py::reinterpret_steal<py::object>(copy));
  }
  return Load(fields, stream_name, buffers);
}

py::object LoadPickledViews(std::shared_ptr<const Sample> fields, const std::string& stream_name) {
  CheckLayout(*fields, stream_name);
  py::capsule owner(new std::shared_ptr<const Sample>(fields), [](void* held) {
    delete static_cast<std::shared_ptr<const Sample>*>(held);
  });
  py::list buffers;
  for (int i = 1; i < fields->num_fields(); ++i) {
    const Tensor& buffer = fields->field(i);
    buffers.append(py::array(py::dtype("uint8"), {static_cast<py::ssize_t>(buffer.bytes())},
                             {static_cast<py::ssize_t>(1)},
                             static_cast<uint8_t*>(const_cast<void*>(buffer.raw())), owner));
  }
  return Load(*fields, stream_name, buffers);
}

}  // namespace feedline::python
