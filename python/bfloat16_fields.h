// torch.bfloat16 tensors in samples. numpy has no bfloat16 dtype, so a batch
// of numpy arrays cannot hold one; feedline.torch.DataLoader returns torch
// tensors and can. Such a field travels as its raw 2-byte values in a float16
// field (bits copied, never converted: nothing on the way does arithmetic on
// a Python dataset's fields; padding writes zeros, which are bfloat16 zeros
// too), and comes back as a torch tensor that
// views those bytes as bfloat16 (Tensor.view(torch.bfloat16), no copy).
//
// The sample's schema says the field is bfloat16 (SchemaKind::kBFloat16), as
// it says a field holds objects (object_fields.h); threads, worker processes
// and collate carry it as any 2-byte field. A loader that delivers numpy
// arrays refuses it, naming the field (Structure::Observe).
//
// Thread safety: every function REQUIRES the GIL.
#ifndef FEEDLINE_PYTHON_BFLOAT16_FIELDS_H_
#define FEEDLINE_PYTHON_BFLOAT16_FIELDS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

namespace feedline::python {

namespace py = pybind11;

// True if `value` is a torch.bfloat16 tensor that can be carried (strided,
// on the CPU, not needing grad); `*bits` is then its values as a contiguous
// numpy float16 array of the same bytes. Others (on a GPU, needing grad) are
// left to the object path, which refuses them with advice.
bool TorchBFloat16Bits(const py::handle& value, py::object* bits);

// A torch.bfloat16 tensor viewing the bytes of `bits` (a float16 array of
// bfloat16 values); it keeps `bits` alive.
py::object TorchBFloat16FromBits(const py::array& bits);

// Why a loader that delivers numpy arrays refuses bfloat16 field `field`
// (the name as the user wrote it).
std::string BFloat16RefusedMessage(const std::string& field);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_BFLOAT16_FIELDS_H_
