// feedline._feedline._run_command: the `feedline` command (tools/run_command.h)
// inside the module, for the package's entry point (feedline/__main__.py), so
// that a wheel needs no executable of its own.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "tools/run_command.h"

namespace py = pybind11;

namespace feedline::python {

void BindCommand(py::module_& m) {
  m.def(
      "_run_command",
      [](const std::vector<std::string>& args) {
        // The command runs no Python code: its loaders' threads and the
        // caller's other threads go on without the GIL.
        py::gil_scoped_release release;
        return cli::RunCommand(args, FEEDLINE_VERSION);
      },
      py::arg("args"),
      "Runs `feedline ARGS[1:]` (ARGS[0]: the program's name) and returns its exit code.");
}

}  // namespace feedline::python
