// feedline._feedline.storage: datasets over storage layouts other than image
// files (HDF5), and packing images into shards (pack_shards). The shard
// dataset is in the vision module, beside ImageFolder.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/storage/hdf5_dataset.h"
#include "feedline/storage/pack.h"
#include "feedline/vision/pipeline.h"
#include "tools/pack_source.h"

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

  // The arguments are checked by feedline.vision.datasets.pack_shards (the
  // messages name them as the user wrote them); PackImages checks again.
  s.def(
      "pack_shards",
      [](const std::string& source, const std::string& out, uint64_t shard_bytes,
         bool skip_broken, bool restart, int64_t max_file_bytes, int jpeg_restart_mcus,
         int jpeg_restart_rows, bool keep_progressive, int threads) {
        storage::PackOptions options;
        options.shard_bytes = shard_bytes;
        options.skip_broken = skip_broken;
        options.restart = restart;
        options.max_file_bytes = max_file_bytes;
        options.jpeg_restart_mcus = jpeg_restart_mcus;
        options.jpeg_restart_rows = jpeg_restart_rows;
        options.jpeg_progressive_to_baseline = !keep_progressive;
        options.threads = threads;
        storage::PackResult result;
        {
          py::gil_scoped_release release;
          result = cli::PackAnySource(source, out, options);
        }
        py::dict info;
        info["records"] = result.records;
        info["shards"] = result.shards;
        info["reused_shards"] = result.reused_shards;
        info["bytes"] = result.bytes;
        info["skipped"] = result.skipped;
        info["rewritten_jpegs"] = result.rewritten_jpegs;
        info["rewritten_bytes_before"] = result.rewritten_bytes_before;
        info["rewritten_bytes_after"] = result.rewritten_bytes_after;
        info["progressive_converted"] = result.progressive_converted;
        info["progressive_bytes_before"] = result.progressive_bytes_before;
        info["progressive_bytes_after"] = result.progressive_bytes_after;
        return info;
      },
      py::arg("source"), py::arg("out"), py::arg("shard_bytes"), py::arg("skip_broken"),
      py::arg("restart"), py::arg("max_file_bytes"), py::arg("jpeg_restart_mcus"),
      py::arg("jpeg_restart_rows"), py::arg("keep_progressive"), py::arg("threads"));
}

}  // namespace feedline::python
