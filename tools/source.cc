#include "tools/source.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "feedline/storage/remote_options.h"
#include "tools/byte_size_option.h"
#include "tools/command_line.h"
#include "tools/detection_source.h"
#include "tools/image_source.h"
#include "tools/shard_source.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;

// What SOURCE may be, for the messages that say it is none of them.
constexpr std::string_view kEverySource =
    "an image folder, a file list, packed shards, an HDF5 file or detection data (a COCO "
    "instances file, a VOC image set, a YOLO images folder)";

// The first ':' of `source` follows a name ending like an HDF5 file's: the
// user meant FILE.h5:DATASET, and FILE is what is missing.
std::string MissingHDF5File(const std::string& source) {
  const size_t colon = source.find(':');
  if (colon == std::string::npos) return "";
  const std::string file = source.substr(0, colon);
  return IsHDF5File(file) ? file : "";
}

}  // namespace

const char* SourceKindName(SourceKind kind) {
  switch (kind) {
    case SourceKind::kFolder:
      return "folder";
    case SourceKind::kFileList:
      return "file_list";
    case SourceKind::kShards:
      return "shards";
    case SourceKind::kHDF5:
      return "hdf5";
    case SourceKind::kCoco:
      return "coco";
    case SourceKind::kVoc:
      return "voc";
    case SourceKind::kYolo:
      return "yolo";
  }
  return "unknown";
}

CLI::Option* AddSourceOptions(CLI::App* app, SourceArgs& args) {
  CLI::Option* source =
      app->add_option("SOURCE", args.source,
                      "Image folder (one subfolder per class), file list ('path label' lines), "
                      "packed shards (their folder, a glob, a .tar or .idx, or the http(s):// "
                      "URL of a served pack folder or shard), an HDF5 file (FILE.h5:DATASET) or "
                      "detection data: a COCO instances file (annotations/instances_NAME.json, "
                      "images in NAME/), a VOC image set (VOC2012/ImageSets/Main/train.txt) or "
                      "a YOLO images folder (images/train, beside labels/train)")
          ->type_name("PATH");
  app->add_option("--fields", args.fields,
                  "HDF5 only: datasets read into each sample besides SOURCE's, as DATASET or "
                  "NAME=DATASET (the field's name; default the dataset's last path component)")
      ->delimiter(',')
      // One value per --fields (repeatable), so that SOURCE may follow it.
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("DATASET,...");
  AddLimitOptions(app, args.limits);
  app->add_option("--cache-dir", args.cache_dir,
                  "A URL SOURCE only: a local folder that keeps whole shards, shared by every "
                  "process on the node (each shard downloaded once, checked, fetched ahead in "
                  "the epoch's order); default none: each record is a ranged GET")
      ->type_name("DIR");
  AddByteSizeOption(app, "--cache-limit", args.cache_limit,
                    "A URL SOURCE with --cache-dir: the most bytes of shards the cache keeps "
                    "(the ones the epoch has passed go first, then the least recently used); "
                    "0: no limit",
                    0, INT64_MAX);
  return source;
}

ParsedSource ParseSource(const SourceArgs& args) {
  const std::string& text = args.source;
  if (text.empty()) throw UsageError("SOURCE is required: " + std::string(kEverySource));
  ParsedSource parsed;
  parsed.path = text;
  // A URL names a pack that a server serves (docs/storage.md, "Packs served
  // over HTTP(S)"): opening it says what is wrong with it.
  if (storage::IsRemoteLocation(text)) {
    if (!args.fields.empty()) {
      throw UsageError("--fields names datasets of an HDF5 file, but SOURCE '" + text +
                       "' is a URL of packed shards");
    }
    parsed.kind = SourceKind::kShards;
    parsed.remote.cache_dir = args.cache_dir;
    parsed.remote.cache_limit = static_cast<uint64_t>(args.cache_limit);
    if (args.cache_limit != 0 && args.cache_dir.empty()) {
      throw UsageError("--cache-limit bounds the cache that --cache-dir names; give --cache-dir");
    }
    return parsed;
  }
  if (!args.cache_dir.empty() || args.cache_limit != 0) {
    throw UsageError(std::string(args.cache_dir.empty() ? "--cache-limit" : "--cache-dir") +
                     " keeps the shards of a pack read over the network, but SOURCE '" + text +
                     "' is local");
  }
  std::error_code ec;
  const fs::file_status status = fs::status(text, ec);
  const bool exists = !ec && fs::exists(status);
  if (exists && fs::is_regular_file(status) && IsHDF5File(text)) {
    parsed.kind = SourceKind::kHDF5;
    parsed.hdf5 = MakeHDF5Source(text, "", args.fields);
    return parsed;
  }
  if (!exists) {
    if (auto file_and_dataset = SplitHDF5Source(text)) {
      parsed.kind = SourceKind::kHDF5;
      parsed.path = file_and_dataset->first;
      parsed.hdf5 = MakeHDF5Source(file_and_dataset->first, file_and_dataset->second, args.fields);
      return parsed;
    }
    const std::string missing_file = MissingHDF5File(text);
    if (!missing_file.empty()) {
      throw UsageError("SOURCE '" + text + "': the HDF5 file '" + missing_file +
                       "' does not exist");
    }
    // A pattern (a glob, or a brace list of shards) matches files, it is
    // none itself.
    if (text.find_first_of("*?[{") == std::string::npos) {
      throw UsageError("SOURCE '" + text + "' does not exist");
    }
  }
  if (exists) {
    if (std::optional<DetectionSource> detection = FindDetectionSource(text)) {
      if (!args.fields.empty()) {
        throw UsageError("--fields names datasets of an HDF5 file, but SOURCE '" + text +
                         "' is detection data");
      }
      parsed.detection = *detection;
      parsed.kind = detection->layout == DetectionLayout::kCoco  ? SourceKind::kCoco
                    : detection->layout == DetectionLayout::kVoc ? SourceKind::kVoc
                                                                 : SourceKind::kYolo;
      return parsed;
    }
  }
  if (IsShardSource(text)) {
    parsed.kind = SourceKind::kShards;
  } else {
    parsed.kind = CheckImageSource(text, kEverySource) == ImageSourceKind::kFolder
                      ? SourceKind::kFolder
                      : SourceKind::kFileList;
  }
  if (!args.fields.empty()) {
    throw UsageError("--fields names datasets of an HDF5 file, but SOURCE '" + text +
                     "' is " + (parsed.kind == SourceKind::kShards ? "packed shards"
                                : parsed.kind == SourceKind::kFolder ? "an image folder"
                                                                     : "a file list"));
  }
  return parsed;
}

std::shared_ptr<const Dataset> OpenSource(const ParsedSource& source, const std::string& pipeline,
                                          int image_size, const SourceLimits& limits) {
  switch (source.kind) {
    case SourceKind::kFolder:
      return OpenImageSource(source.path, ImageSourceKind::kFolder, pipeline, image_size, limits);
    case SourceKind::kFileList:
      return OpenImageSource(source.path, ImageSourceKind::kFileList, pipeline, image_size,
                             limits);
    case SourceKind::kShards:
      return OpenShardSource(source.path, pipeline, image_size, limits, source.remote);
    case SourceKind::kHDF5:
      return OpenHDF5Source(source.hdf5, pipeline, image_size, limits);
    case SourceKind::kCoco:
    case SourceKind::kVoc:
    case SourceKind::kYolo:
      return OpenDetectionSource(source.detection, pipeline, image_size, limits);
  }
  throw UsageError("SOURCE '" + source.path + "': unknown kind");
}

}  // namespace feedline::cli
