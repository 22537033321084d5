#include "python/dlpack_export.h"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace feedline::python {
namespace {

// The DLPack type of `dtype`, or none where a BatchArray is not made.
std::optional<DLDataType> DLPackType(DType dtype) {
  auto type = [](DLDataTypeCode code, int bits) {
    return DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (dtype) {
    case DType::kU8: return type(kDLUInt, 8);
    case DType::kI8: return type(kDLInt, 8);
    case DType::kI16: return type(kDLInt, 16);
    case DType::kI32: return type(kDLInt, 32);
    case DType::kI64: return type(kDLInt, 64);
    case DType::kF16: return type(kDLFloat, 16);
    case DType::kF32: return type(kDLFloat, 32);
    case DType::kF64: return type(kDLFloat, 64);
    case DType::kBool:  // no bool code before DLPack 0.8
    case DType::kU16:   // no uint16 in torch 1.13
      return std::nullopt;
  }
  return std::nullopt;
}

// What a capsule's tensor owns: a handle on the batch, and the shape and
// strides the DLTensor points to.
struct ExportedField {
  Batch batch;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
};

void DeleteExported(DLManagedTensor* managed) {
  delete static_cast<ExportedField*>(managed->manager_ctx);
}

// A capsule nobody consumed still owns its tensor; a consumer renames it
// "used_dltensor" and calls the deleter itself when done.
void DeleteUnusedCapsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed != nullptr) managed->deleter(managed);
}

class BatchArray {
 public:
  BatchArray(Batch batch, int field) : batch_(std::move(batch)), field_(field) {}

  const Tensor& tensor() const { return batch_.field(field_); }

  py::tuple shape() const {
    const Shape& shape = tensor().shape();
    py::tuple out(static_cast<size_t>(shape.rank()));
    for (int i = 0; i < shape.rank(); ++i) out[static_cast<size_t>(i)] = shape[i];
    return out;
  }

  // A new capsule per call (the protocol allows one consumer per capsule).
  // Only the CPU is served: `stream` must be None.
  py::capsule DLPack(const py::object& stream) const {
    if (!stream.is_none()) {
      throw py::buffer_error("feedline batch arrays are on the CPU: __dlpack__ takes no stream");
    }
    const Tensor& t = tensor();
    auto exported = std::make_unique<ExportedField>();
    exported->batch = batch_;
    exported->shape.assign(t.shape().begin(), t.shape().end());
    exported->strides.assign(exported->shape.size(), 1);
    for (size_t i = exported->shape.size(); i-- > 1;) {
      exported->strides[i - 1] = exported->strides[i] * exported->shape[i];
    }
    DLTensor& dl = exported->managed.dl_tensor;
    dl.data = const_cast<void*>(t.raw());
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(exported->shape.size());
    dl.dtype = *DLPackType(t.dtype());
    dl.shape = exported->shape.data();
    dl.strides = exported->strides.data();
    dl.byte_offset = 0;
    exported->managed.manager_ctx = exported.get();
    exported->managed.deleter = DeleteExported;
    DLManagedTensor* managed = &exported->managed;
    PyObject* capsule = PyCapsule_New(managed, "dltensor", DeleteUnusedCapsule);
    if (capsule == nullptr) throw py::error_already_set();
    exported.release();  // the capsule, then its consumer, owns it
    return py::reinterpret_steal<py::capsule>(capsule);
  }

  // A numpy array over the same memory, holding a handle on the batch.
  py::array Numpy() const { return ViewArray(tensor(), BatchOwner(batch_)); }

 private:
  Batch batch_;
  int field_;
};

}  // namespace

bool ExportsThroughDLPack(const Batch& batch, int field) {
  const Tensor& tensor = batch.field(field);
  return tensor.raw() != nullptr && DLPackType(tensor.dtype()).has_value();
}

py::object MakeBatchArray(const Batch& batch, int field) {
  return py::cast(BatchArray(batch, field));
}

void BindBatchArray(py::module_& m) {
  py::class_<BatchArray>(m, "BatchArray",
                         "One field of a delivered batch, for a framework to take through "
                         "DLPack (its memory is the batch's, kept while it is referenced).")
      .def("__dlpack__", &BatchArray::DLPack, py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const BatchArray&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
      .def_property_readonly("shape", &BatchArray::shape)
      .def("numpy", &BatchArray::Numpy, "A numpy array over the same memory.")
      .def(
          "__array__",
          [](const BatchArray& self, const py::object& dtype, const py::object& copy) {
            py::object array = self.Numpy();
            if (!dtype.is_none()) array = array.attr("astype")(dtype);
            if (!copy.is_none() && py::bool_(copy)) array = array.attr("copy")();
            return array;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none());
}

}  // namespace feedline::python
