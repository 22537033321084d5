#include "python/python_seeding.h"

#include <pybind11/pybind11.h>

#include "feedline/rng.h"

namespace feedline::python {
namespace {

namespace py = pybind11;

// A stream of its own, so these seeds are not the draws of the native
// transforms' Rng(seed, epoch, index).
constexpr uint64_t kPythonGeneratorsStream = 0x5059'7365'6564ULL;

struct SeedFunctions {
  py::object random_seed, random_getstate, random_setstate;
  py::object numpy_seed, numpy_get_state, numpy_set_state;
};

const SeedFunctions& Functions() {
  // Leaked: these references must not be dropped after the interpreter ends.
  static const SeedFunctions* functions = [] {
    auto* f = new SeedFunctions;
    py::module_ random = py::module_::import("random");
    py::module_ numpy_random = py::module_::import("numpy.random");
    f->random_seed = random.attr("seed");
    f->random_getstate = random.attr("getstate");
    f->random_setstate = random.attr("setstate");
    f->numpy_seed = numpy_random.attr("seed");
    f->numpy_get_state = numpy_random.attr("get_state");
    f->numpy_set_state = numpy_random.attr("set_state");
    return f;
  }();
  return *functions;
}

// torch's default CPU generator (what torchvision's random transforms draw
// from), or None while torch is not imported: looked up again until it is,
// since a dataset may import torch after the loader started. Seeding it
// directly costs ~1 us; torch.manual_seed also seeds every GPU (~21 us).
py::object TorchGenerator() {
  static py::object* generator = nullptr;  // leaked, as Functions()
  if (generator != nullptr) return *generator;
  PyObject* torch = PyImport_GetModule(py::str("torch").ptr());  // new reference or null
  if (torch == nullptr) {
    PyErr_Clear();
    return py::none();
  }
  py::object module = py::reinterpret_steal<py::object>(torch);
  if (!py::hasattr(module, "default_generator")) return py::none();  // still importing
  generator = new py::object(module.attr("default_generator"));
  return *generator;
}

}  // namespace

void SeedPythonGenerators(uint64_t seed, int64_t epoch, int64_t index) {
  Rng rng(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index),
          kPythonGeneratorsStream);
  const uint64_t value = rng.NextU64();
  const SeedFunctions& f = Functions();
  f.random_seed(py::int_(value));
  f.numpy_seed(py::int_(value >> 32));  // numpy's legacy seeds are 32-bit
  py::object torch_generator = TorchGenerator();
  if (!torch_generator.is_none()) torch_generator.attr("manual_seed")(py::int_(rng.NextU64()));
}

SavedPythonGenerators::SavedPythonGenerators() {
  const SeedFunctions& f = Functions();
  saved_random_ = f.random_getstate();
  saved_numpy_ = f.numpy_get_state();
  py::object torch_generator = TorchGenerator();
  if (!torch_generator.is_none()) saved_torch_ = torch_generator.attr("get_state")();
}

SavedPythonGenerators::~SavedPythonGenerators() {
  const SeedFunctions& f = Functions();
  try {
    f.random_setstate(saved_random_);
    f.numpy_set_state(saved_numpy_);
    // torch imported meanwhile (by the dataset) has no saved state: its
    // generator was the sample's from then on, as random's would be.
    if (saved_torch_) TorchGenerator().attr("set_state")(saved_torch_);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable(__func__);
  }
}

}  // namespace feedline::python
