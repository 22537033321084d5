// feedline._feedline.storage: datasets over storage layouts other than image
// files (HDF5). Packed shards are in the vision module, beside ImageFolder.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/hdf5_dataset.h"
#include "feedline/vision/pipeline.h"

namespace py = pybind11;

namespace feedline::python {

void BindStorage(py::module_& m) {
  py::module_ s = m.def_submodule("storage", "datasets over HDF5 files");
  py::class_<storage::HDF5Dataset, Dataset, std::shared_ptr<storage::HDF5Dataset>>(s, "HDF5Dataset")
      .def(py::init([](const std::string& path, const std::vector<std::string>& datasets,
                       const std::vector<std::string>& names,
                       const std::vector<std::optional<bool>>& images,
                       std::optional<vision::Pipeline> pipeline) {
             if (names.size() != datasets.size() || images.size() != datasets.size()) {
               throw Error("HDF5Dataset: datasets, names and images differ in length");
             }
             std::vector<storage::HDF5Field> fields;
             for (size_t i = 0; i < datasets.size(); ++i) {
               fields.push_back({datasets[i], names[i], images[i]});
             }
             py::gil_scoped_release release;
             return std::make_shared<storage::HDF5Dataset>(path, std::move(fields),
                                                           std::move(pipeline));
           }),
           py::arg("path"), py::arg("datasets"), py::arg("names"), py::arg("images"),
           py::arg("pipeline"))
      .def_property_readonly("path", &storage::HDF5Dataset::path)
      .def_property_readonly("field_names",
                             [](const storage::HDF5Dataset& d) {
                               std::vector<std::string> names;
                               for (int i = 0; i < d.num_fields(); ++i)
                                 names.push_back(d.field_name(i));
                               return names;
                             })
      .def_property_readonly("field_kinds", [](const storage::HDF5Dataset& d) {
        std::vector<std::string> kinds;
        for (int i = 0; i < d.num_fields(); ++i)
          kinds.push_back(storage::HDF5FieldKindName(d.field_kind(i)));
        return kinds;
      });
  s.def("library_threadsafe", &storage::HDF5Dataset::LibraryThreadSafe);
}

}  // namespace feedline::python
