#include "tools/source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "feedline/error.h"
#include "feedline/vision/file_list.h"
#include "feedline/vision/image_folder.h"
#include "feedline/vision/pipeline.h"
#include "tools/command_line.h"
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
  std::ifstream in(list_file, std::ios::binary);
  if (!in) throw UsageError("cannot read the file list '" + list_file + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return vision::FileList::Parse(text.str(), list_file);
}

vision::Pipeline MakePipeline(const std::string& pipeline, int image_size) {
  if (pipeline == "train") return vision::TrainPipeline(image_size);
  // torchvision's evaluation recipe keeps the 256 / 224 ratio.
  const int resize = static_cast<int>(image_size * 256.0 / 224.0 + 0.5);
  return vision::ValPipeline(resize, image_size);
}

}  // namespace

const std::vector<std::string>& PipelineNames() {
  static const std::vector<std::string> names = {"train", "val", "decode", "read"};
  return names;
}

SourceKind CheckSource(const std::string& source) {
  std::error_code ec;
  const fs::file_status status = fs::status(source, ec);
  if (ec || !fs::exists(status)) throw UsageError("SOURCE '" + source + "' does not exist");
  if (fs::is_directory(status)) {
    if (fs::directory_iterator(source, ec) == fs::directory_iterator()) {
      throw UsageError("SOURCE '" + source +
                       "' is an empty folder: expected one folder of images per class");
    }
    return SourceKind::kFolder;
  }
  if (fs::is_regular_file(status)) {
    if (fs::file_size(source, ec) == 0) {
      throw UsageError("SOURCE '" + source +
                       "' is an empty file list: expected lines of 'path label'");
    }
    return SourceKind::kFileList;
  }
  throw UsageError("SOURCE '" + source + "' is neither a folder nor a file list");
}

std::shared_ptr<const Dataset> OpenImageSource(const std::string& source,
                                               const std::string& pipeline, int image_size) {
  const SourceKind kind = CheckSource(source);
  // Whatever the vision library finds wrong with the source itself (no class
  // folders, no images, a bad list line) is a usage error, not a failure.
  try {
    if (pipeline == "read" || pipeline == "decode") {
      const auto mode =
          pipeline == "read" ? RawImageDataset::Mode::kRead : RawImageDataset::Mode::kDecode;
      if (kind == SourceKind::kFolder) {
        vision::ImageFolder::Listing listing = vision::ImageFolder::List(source);
        return std::make_shared<RawImageDataset>(source, std::move(listing.files), mode);
      }
      return std::make_shared<RawImageDataset>(ListRoot(source), ReadList(source), mode);
    }
    if (pipeline != "train" && pipeline != "val") {
      throw UsageError("--pipeline: must be one of train, val, decode or read, got '" + pipeline +
                       "'");
    }
    if (kind == SourceKind::kFolder) {
      return std::make_shared<vision::ImageFolder>(source, MakePipeline(pipeline, image_size));
    }
    return std::make_shared<vision::FileList>(source, ListRoot(source),
                                              MakePipeline(pipeline, image_size));
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace feedline::cli
