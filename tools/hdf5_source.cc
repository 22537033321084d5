#include "tools/hdf5_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "feedline/error.h"
#include "tools/command_line.h"
#include "tools/load_shape.h"
#include "tools/shapes_only_dataset.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;

// HDF5's format signature, at the start of the superblock.
constexpr std::array<unsigned char, 8> kSignature = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

bool HasSignatureAt(int fd, off_t offset) {
  std::array<unsigned char, 8> head{};
  return ::pread(fd, head.data(), head.size(), offset) == static_cast<ssize_t>(head.size()) &&
         head == kSignature;
}

bool HasHDF5Extension(const std::string& path) {
  const std::string extension = fs::path(path).extension().string();
  return extension == ".h5" || extension == ".hdf5" || extension == ".hdf" ||
         extension == ".he5";
}

bool IsRegularFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace

bool IsHDF5File(const std::string& path) {
  if (HasHDF5Extension(path)) return true;
  // O_NONBLOCK: a path that became a FIFO since it was checked is not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  bool found = false;
  // The superblock lies at 0 or, after a user block, at 512 times a power of two.
  for (off_t offset : {0, 512, 1024, 2048}) found = found || HasSignatureAt(fd, offset);
  ::close(fd);
  return found;
}

std::optional<std::pair<std::string, std::string>> SplitHDF5Source(const std::string& source) {
  for (size_t colon = source.find(':'); colon != std::string::npos;
       colon = source.find(':', colon + 1)) {
    const std::string file = source.substr(0, colon);
    if (!IsRegularFile(file)) continue;
    if (!IsHDF5File(file)) {
      throw UsageError("SOURCE '" + source + "': '" + file +
                       "' is no HDF5 file (FILE:DATASET names a dataset of an HDF5 file)");
    }
    const std::string dataset = source.substr(colon + 1);
    if (dataset.empty()) {
      throw UsageError("SOURCE '" + source + "' names no dataset after the ':' (FILE:DATASET)");
    }
    return std::make_pair(file, dataset);
  }
  return std::nullopt;
}

HDF5Source MakeHDF5Source(const std::string& file, const std::string& dataset,
                          const std::vector<std::string>& fields) {
  HDF5Source source;
  source.file = file;
  if (!dataset.empty()) source.fields.push_back({dataset, "", std::nullopt});
  for (const std::string& value : fields) {
    const size_t equals = value.find('=');
    storage::HDF5Field field;
    if (equals == std::string::npos) {
      field.dataset = value;
    } else {
      field.name = value.substr(0, equals);
      field.dataset = value.substr(equals + 1);
      if (field.name.empty()) {
        throw UsageError("--fields: '" + value + "' names no field before the '=' (NAME=DATASET)");
      }
    }
    if (field.dataset.empty()) {
      throw UsageError("--fields: '" + value + "' names no dataset (DATASET or NAME=DATASET)");
    }
    source.fields.push_back(std::move(field));
  }
  if (source.fields.empty()) {
    throw UsageError("SOURCE '" + file + "' is an HDF5 file: name the datasets to read, as '" +
                     file + ":DATASET' or with --fields DATASET,...");
  }
  return source;
}

std::shared_ptr<const Dataset> OpenHDF5Source(const HDF5Source& source,
                                              const std::string& pipeline, int image_size,
                                              const SourceLimits& limits) {
  std::vector<storage::HDF5Field> fields = source.fields;
  // read: the encoded bytes are the sample, as a file's bytes are for an
  // image folder; no pipeline runs.
  std::optional<vision::Pipeline> recipe;
  if (pipeline == "read") {
    for (storage::HDF5Field& field : fields) field.image = false;
  } else {
    recipe = ImagePipeline(pipeline, image_size, limits.max_pixels);
  }
  std::shared_ptr<const Dataset> dataset;
  // What HDF5Dataset refuses is what SOURCE and --fields named (a missing
  // dataset, an unsupported type, rows of another count): a usage error,
  // as for an image folder without images.
  try {
    dataset = std::make_shared<storage::HDF5Dataset>(source.file, std::move(fields),
                                                     std::move(recipe));
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  if (pipeline == "read" || pipeline == "decode") {
    return std::make_shared<ShapesOnlyDataset>(std::move(dataset));
  }
  return dataset;
}

}  // namespace feedline::cli
