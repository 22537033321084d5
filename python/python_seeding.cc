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
  py::object random_seed;
  py::object numpy_seed;
};

const SeedFunctions& Functions() {
  // Leaked: these references must not be dropped after the interpreter ends.
  static const SeedFunctions* functions = [] {
    auto* f = new SeedFunctions;
    f->random_seed = py::module_::import("random").attr("seed");
    f->numpy_seed = py::module_::import("numpy.random").attr("seed");
    return f;
  }();
  return *functions;
}

}  // namespace

void SeedPythonGenerators(uint64_t seed, int64_t epoch, int64_t index) {
  Rng rng(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index),
          kPythonGeneratorsStream);
  const uint64_t value = rng.NextU64();
  const SeedFunctions& f = Functions();
  f.random_seed(py::int_(value));
  f.numpy_seed(py::int_(value >> 32));  // numpy's legacy seeds are 32-bit
}

}  // namespace feedline::python
