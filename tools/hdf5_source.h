// An HDF5 file as a SOURCE: "FILE.h5:DATASET" names the file and the
// dataset whose rows are the samples; --fields names (more) datasets of the
// same length, read into the same sample: "labels", "/train/labels" or
// "label=/train/labels" (the field's name, else the dataset's last path
// component). storage::HDF5Dataset reads them; variable-length uint8 rows
// are encoded images, decoded by the pipeline.
//
// Thread safety: pure functions; the datasets are immutable.
#ifndef FEEDLINE_TOOLS_HDF5_SOURCE_H_
#define FEEDLINE_TOOLS_HDF5_SOURCE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/storage/hdf5_dataset.h"
#include "tools/source_limits.h"

namespace feedline::cli {

struct HDF5Source {
  std::string file;
  std::vector<storage::HDF5Field> fields;
};

// Whether the regular file `path` is an HDF5 file: HDF5's signature at
// offset 0, 512, 1024 or 2048 (after a user block), or a name ending in
// .h5, .hdf5, .hdf or .he5.
bool IsHDF5File(const std::string& path);

// "FILE:DATASET" split where FILE is an existing regular file (the first
// such prefix before a ':'); nullopt when no prefix is one. Throws
// UsageError if that file is no HDF5 file or DATASET is empty.
std::optional<std::pair<std::string, std::string>> SplitHDF5Source(const std::string& source);

// The fields of HDF5 file `file`: `dataset` (may be empty) first, then the
// --fields values. Throws UsageError naming the value if one is malformed
// (an empty name or dataset), or if there is no field at all.
HDF5Source MakeHDF5Source(const std::string& file, const std::string& dataset,
                          const std::vector<std::string>& fields);

// The dataset over `source` whose image fields go through `pipeline`:
// train or val at `image_size`; decode (each image whole) and read (its
// bytes only) give the loader each field's shape only (ShapesOnlyDataset).
// Numeric fields are read as they are whatever the pipeline. Throws
// UsageError naming the file and dataset if the file cannot be opened as
// HDF5, a dataset is missing, of an unsupported type or of another length.
std::shared_ptr<const Dataset> OpenHDF5Source(const HDF5Source& source,
                                              const std::string& pipeline, int image_size,
                                              const SourceLimits& limits);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_HDF5_SOURCE_H_
