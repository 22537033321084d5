#include "tools/image_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "feedline/error.h"
#include "feedline/vision/file_list.h"
#include "feedline/vision/image_folder.h"
#include "feedline/vision/read_file.h"
#include "tools/command_line.h"
#include "tools/load_shape.h"
#include "tools/raw_image_dataset.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;

// A list file's paths are relative to the folder it lies in.
std::string ListRoot(const std::string& list_file) {
  const fs::path parent = fs::path(list_file).parent_path();
  return parent.empty() ? "." : parent.string();
}

vision::ImageList ReadList(const std::string& list_file) {
  return vision::FileList::Parse(vision::FileList::ReadListText(list_file), list_file);
}

// The first bytes of a file (fewer if it is shorter; none if it cannot be
// read). O_NONBLOCK: should the path have become a FIFO since it was
// checked, opening it does not wait for a writer.
std::vector<uint8_t> FileHead(const std::string& path) {
  std::vector<uint8_t> head(64);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  const ssize_t n = ::read(fd, head.data(), head.size());
  ::close(fd);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return head;
}

}  // namespace

ImageSourceKind CheckImageSource(const std::string& source, std::string_view expected) {
  const std::string named = "SOURCE '" + source + "'";
  const std::string not_expected = ", not " + std::string(expected);
  std::error_code ec;
  const fs::file_status status = fs::status(source, ec);
  if (ec || !fs::exists(status)) throw UsageError(named + " does not exist");
  if (fs::is_directory(status)) {
    if (fs::directory_iterator(source, ec) == fs::directory_iterator()) {
      throw UsageError(named + " is an empty folder: expected one folder of images per class");
    }
    return ImageSourceKind::kFolder;
  }
  if (fs::is_regular_file(status)) {
    if (fs::file_size(source, ec) == 0) {
      throw UsageError(named + " is an empty file list: expected lines of 'path label'");
    }
    const std::vector<uint8_t> head = FileHead(source);
    if (vision::DetectFormat(head) != vision::ImageFormat::kUnknown) {
      throw UsageError(named + " is an image" + not_expected +
                       " (give the folder that holds one folder of images per class)");
    }
    if (std::find(head.begin(), head.end(), uint8_t{0}) != head.end()) {
      throw UsageError(named + " is a binary file" + not_expected);
    }
    return ImageSourceKind::kFileList;
  }
  struct stat st;
  const char* type = ::stat(source.c_str(), &st) == 0 ? vision::FileTypeName(st.st_mode) : "";
  throw UsageError(named + " is " + (*type ? type : std::string("no file")) + not_expected);
}

std::shared_ptr<const Dataset> OpenImageSource(const std::string& source, ImageSourceKind kind,
                                               const std::string& pipeline, int image_size,
                                               const SourceLimits& limits) {
  // Whatever the vision library finds wrong with the source itself (no class
  // folders, no images, a bad list line) is a usage error, not a failure.
  try {
    if (pipeline == "read" || pipeline == "decode") {
      const auto mode =
          pipeline == "read" ? RawImageDataset::Mode::kRead : RawImageDataset::Mode::kDecode;
      if (kind == ImageSourceKind::kFolder) {
        vision::ImageFolder::Listing listing = vision::ImageFolder::List(source);
        return std::make_shared<RawImageDataset>(source, std::move(listing.files), mode, limits);
      }
      return std::make_shared<RawImageDataset>(ListRoot(source), ReadList(source), mode, limits);
    }
    vision::ReadOptions read;
    read.max_bytes = limits.max_file_bytes;
    vision::Pipeline recipe = ImagePipeline(pipeline, image_size, limits.max_pixels);
    if (kind == ImageSourceKind::kFolder) {
      return std::make_shared<vision::ImageFolder>(source, std::move(recipe), read);
    }
    return std::make_shared<vision::FileList>(source, ListRoot(source), std::move(recipe), read);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace feedline::cli
