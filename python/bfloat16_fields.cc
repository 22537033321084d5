#include "python/bfloat16_fields.h"

namespace feedline::python {

bool TorchBFloat16Bits(const py::handle& value, py::object* bits) {
  // The module first: this runs for every value numpy could not take (a
  // dataclass, a set), and must not import torch for them.
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()));
  if (!py::hasattr(type, "__module__")) return false;
  const std::string module = py::str(type.attr("__module__"));
  if (module.rfind("torch", 0) != 0) return false;
  const py::module_ torch = py::module_::import("torch");
  if (!py::isinstance(value, torch.attr("Tensor"))) return false;
  if (!value.attr("dtype").is(torch.attr("bfloat16"))) return false;
  if (!value.attr("layout").is(torch.attr("strided")) ||
      value.attr("requires_grad").cast<bool>() ||
      value.attr("device").attr("type").cast<std::string>() != "cpu") {
    return false;
  }
  // Same element size, so view() reinterprets the bytes; numpy then shares them.
  *bits = value.attr("contiguous")().attr("view")(torch.attr("float16")).attr("numpy")();
  return true;
}

py::object TorchBFloat16FromBits(const py::array& bits) {
  const py::module_ torch = py::module_::import("torch");
  return torch.attr("from_numpy")(bits).attr("view")(torch.attr("bfloat16"));
}

std::string BFloat16RefusedMessage(const std::string& field) {
  return "field '" + field +
         "' is a torch.bfloat16 tensor, which numpy has no dtype for, so this loader's numpy "
         "batches cannot hold it: feedline.torch.DataLoader delivers it as a torch.bfloat16 "
         "tensor; with this loader, return it as float32 (.float()) in __getitem__";
}

}  // namespace feedline::python
