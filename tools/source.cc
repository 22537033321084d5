#include "tools/source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "feedline/error.h"
#include "feedline/vision/file_list.h"
#include "feedline/vision/image_folder.h"
#include "feedline/vision/pipeline.h"
#include "tools/byte_size_option.h"
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
  return vision::FileList::Parse(vision::FileList::ReadListText(list_file), list_file);
}

vision::Pipeline MakePipeline(const std::string& pipeline, int image_size, int64_t max_pixels) {
  // Validated before the recipe is built, so an absurd --size is refused
  // with the option's name.
  const int64_t output_pixels = static_cast<int64_t>(image_size) * image_size;
  if (output_pixels > max_pixels) {
    throw UsageError("--size " + std::to_string(image_size) + " makes images of " +
                     std::to_string(output_pixels) + " pixels, over --max-pixels " +
                     std::to_string(max_pixels));
  }
  // torchvision's evaluation recipe keeps the 256 / 224 ratio.
  const int resize = static_cast<int>(image_size * 256.0 / 224.0 + 0.5);
  vision::DecodeOptions decode;
  decode.max_pixels = max_pixels;
  if (pipeline == "train") return vision::TrainPipeline(image_size, DType::kF32, decode);
  return vision::ValPipeline(resize, image_size, DType::kF32, decode);
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

const std::vector<std::string>& PipelineNames() {
  static const std::vector<std::string> names = {"train", "val", "decode", "read"};
  return names;
}

void AddLimitOptions(CLI::App* app, SourceLimits& limits) {
  AddByteSizeOption(app, "--max-file-bytes", limits.max_file_bytes,
                    "A larger file is a broken sample, refused before it is read", 1,
                    std::numeric_limits<int64_t>::max());
  app->add_option("--max-pixels", limits.max_pixels,
                  "An image with more pixels is a broken sample, refused from its header "
                  "(decompression bombs; Pillow's MAX_IMAGE_PIXELS)")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->capture_default_str();
}

CLI::Option* AddLoadShapeOptions(CLI::App* app, LoadShape& shape) {
  CLI::Option* pipeline =
      app->add_option(
             "--pipeline", shape.pipeline,
             "train: random crop + flip + normalize; val: resize + center crop + normalize; "
             "decode: full decode only; read: file bytes only")
          ->check(OneOf(PipelineNames()))
          ->type_name("train|val|decode|read")
          ->capture_default_str();
  app->add_option("--batch", shape.batch, "Samples per batch")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->capture_default_str();
  app->add_option("--size", shape.image_size, "Output image size of the train and val pipelines")
      ->check(IntAtLeast(1))
      ->type_name("PX")
      ->capture_default_str();
  app->add_option("--seed", shape.seed, "Seed of the shuffle and the augmentation")
      ->check(IntAtLeast(0))
      ->type_name("S")
      ->capture_default_str();
  app->add_option("--step-ms", shape.step_ms,
                  "Simulated training step: the consumer sleeps MS per batch")
      ->check(NumberAtLeast(0))
      ->type_name("MS")
      ->capture_default_str();
  return pipeline;
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
    const std::vector<uint8_t> head = FileHead(source);
    if (vision::DetectFormat(head) != vision::ImageFormat::kUnknown) {
      throw UsageError("SOURCE '" + source +
                       "' is an image, not a folder or a file list (give the folder that holds "
                       "one folder of images per class)");
    }
    if (std::find(head.begin(), head.end(), uint8_t{0}) != head.end()) {
      throw UsageError("SOURCE '" + source +
                       "' is a binary file, not a folder or a file list (lines of 'path label')");
    }
    return SourceKind::kFileList;
  }
  struct stat st;
  const char* type = ::stat(source.c_str(), &st) == 0 ? vision::FileTypeName(st.st_mode) : "";
  throw UsageError("SOURCE '" + source + "' is " + (*type ? type : std::string("no file")) +
                   ", neither a folder nor a file list");
}

std::shared_ptr<const Dataset> OpenImageSource(const std::string& source,
                                               const std::string& pipeline, int image_size,
                                               const SourceLimits& limits) {
  const SourceKind kind = CheckSource(source);
  // Whatever the vision library finds wrong with the source itself (no class
  // folders, no images, a bad list line) is a usage error, not a failure.
  try {
    if (pipeline == "read" || pipeline == "decode") {
      const auto mode =
          pipeline == "read" ? RawImageDataset::Mode::kRead : RawImageDataset::Mode::kDecode;
      if (kind == SourceKind::kFolder) {
        vision::ImageFolder::Listing listing = vision::ImageFolder::List(source);
        return std::make_shared<RawImageDataset>(source, std::move(listing.files), mode, limits);
      }
      return std::make_shared<RawImageDataset>(ListRoot(source), ReadList(source), mode, limits);
    }
    if (pipeline != "train" && pipeline != "val") {
      throw UsageError("--pipeline: must be one of train, val, decode or read, got '" + pipeline +
                       "'");
    }
    vision::ReadOptions read;
    read.max_bytes = limits.max_file_bytes;
    if (kind == SourceKind::kFolder) {
      return std::make_shared<vision::ImageFolder>(
          source, MakePipeline(pipeline, image_size, limits.max_pixels), read);
    }
    return std::make_shared<vision::FileList>(
        source, ListRoot(source), MakePipeline(pipeline, image_size, limits.max_pixels), read);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace feedline::cli
