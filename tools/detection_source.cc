#include "tools/detection_source.h"

#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "feedline/vision/coco_detection.h"
#include "feedline/vision/read_file.h"
#include "feedline/vision/voc_detection.h"
#include "feedline/vision/yolo_detection.h"
#include "tools/command_line.h"
#include "tools/load_shape.h"

namespace feedline::cli {
namespace {

namespace fs = std::filesystem;

bool IsDirectory(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool IsRegularFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// ANNOTATIONS.json named as COCO names them, "<task>_<images>.json" in an
// `annotations` folder: the images' folder beside it.
std::optional<DetectionSource> Coco(const fs::path& path) {
  if (path.extension() != ".json" || !IsRegularFile(path)) return std::nullopt;
  const std::string stem = path.stem().string();
  const size_t underscore = stem.find('_');
  const fs::path folder = path.parent_path();
  const std::string images_name =
      underscore == std::string::npos ? "" : stem.substr(underscore + 1);
  const fs::path images = folder.parent_path() / images_name;
  if (images_name.empty() || !IsDirectory(images)) {
    throw UsageError("SOURCE '" + path.string() +
                     "' is read as a COCO instances file, whose images are in the folder "
                     "COCO's layout puts them: annotations/instances_NAME.json -> NAME/ beside "
                     "annotations/" +
                     (images_name.empty() ? std::string(", and its name has no _NAME")
                                          : ", and " + images.string() + " is not a folder"));
  }
  DetectionSource source;
  source.layout = DetectionLayout::kCoco;
  source.annotations = path.string();
  source.images = images.string();
  return source;
}

// VOC<year>/ImageSets/Main/<set>.txt beside VOC<year>/Annotations.
std::optional<DetectionSource> Voc(const fs::path& path) {
  if (path.extension() != ".txt" || !IsRegularFile(path)) return std::nullopt;
  const fs::path main = path.parent_path();
  const fs::path image_sets = main.parent_path();
  const fs::path root = image_sets.parent_path();
  if (main.filename() != "Main" || image_sets.filename() != "ImageSets" ||
      !IsDirectory(root / "Annotations")) {
    return std::nullopt;
  }
  DetectionSource source;
  source.layout = DetectionLayout::kVoc;
  source.voc_root = root.string();
  source.image_set = path.stem().string();
  return source;
}

// A folder with an `images` part in its path whose `labels` twin exists.
std::optional<DetectionSource> Yolo(const fs::path& path) {
  if (!IsDirectory(path)) return std::nullopt;
  const fs::path absolute = fs::absolute(path).lexically_normal();
  fs::path labels;
  bool found = false;
  // The last `images` part, as YoloDetection and Ultralytics take it.
  std::vector<fs::path> parts(absolute.begin(), absolute.end());
  for (size_t i = parts.size(); i-- > 0;) {
    if (parts[i] == "images") {
      for (size_t j = 0; j < parts.size(); ++j) labels /= (j == i ? fs::path("labels") : parts[j]);
      found = true;
      break;
    }
  }
  if (!found || !IsDirectory(labels)) return std::nullopt;
  DetectionSource source;
  source.layout = DetectionLayout::kYolo;
  source.images = path.string();
  return source;
}

}  // namespace

std::optional<DetectionSource> FindDetectionSource(const std::string& source) {
  const fs::path path(source);
  if (auto coco = Coco(path)) return coco;
  if (auto voc = Voc(path)) return voc;
  return Yolo(path);
}

std::shared_ptr<const Dataset> OpenDetectionSource(const DetectionSource& source,
                                                   const std::string& pipeline, int image_size,
                                                   const SourceLimits& limits) {
  if (pipeline == "read") {
    throw UsageError("--pipeline read reads files without decoding them; detection data is "
                     "read with its objects: use decode, train or val");
  }
  vision::ReadOptions read;
  read.max_bytes = limits.max_file_bytes;
  vision::Pipeline recipe = ImagePipeline(pipeline, image_size, limits.max_pixels);
  // What the library finds wrong with the layout itself is a usage error.
  try {
    switch (source.layout) {
      case DetectionLayout::kCoco: {
        vision::CocoDetectionOptions options;
        options.read = read;
        return std::make_shared<vision::CocoDetection>(source.images, source.annotations,
                                                       std::move(recipe), options);
      }
      case DetectionLayout::kVoc: {
        vision::VocDetectionOptions options;
        options.read = read;
        return std::make_shared<vision::VocDetection>(source.voc_root, source.image_set,
                                                      std::move(recipe), options);
      }
      case DetectionLayout::kYolo: {
        vision::YoloDetectionOptions options;
        options.read = read;
        return std::make_shared<vision::YoloDetection>(source.images, std::move(recipe), options);
      }
    }
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  throw UsageError("SOURCE: unknown detection layout");
}

}  // namespace feedline::cli
