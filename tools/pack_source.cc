#include "tools/pack_source.h"

#include <memory>
#include <optional>
#include <utility>

#include "feedline/vision/coco_detection.h"
#include "feedline/vision/voc_detection.h"
#include "feedline/vision/yolo_detection.h"
#include "tools/detection_source.h"

namespace feedline::cli {
namespace {

// The dataset's images, listed by path, and its records as the pack's
// annotations. The dataset only lists and annotates: its pipeline never runs.
template <typename Detection>
storage::PackResult PackDetection(const std::string& source, std::shared_ptr<const Detection> data,
                                  const std::string& out, storage::PackOptions options) {
  vision::ImageList files;
  for (int64_t i = 0; i < data->size(); ++i) files.Add(data->Source(i), 0);
  options.annotations = [data](int64_t file, const vision::ImageInfo& image) {
    return data->Record(file, image.height, image.width);
  };
  return storage::PackImages(source, "", files, {}, out, options);
}

}  // namespace

storage::PackResult PackAnySource(const std::string& source, const std::string& out,
                                  storage::PackOptions options) {
  const std::optional<DetectionSource> detection = FindDetectionSource(source);
  if (!detection) return storage::PackSource(source, out, options);
  vision::Pipeline unused({});
  switch (detection->layout) {
    case DetectionLayout::kCoco:
      return PackDetection(source,
                           std::make_shared<const vision::CocoDetection>(
                               detection->images, detection->annotations, std::move(unused)),
                           out, std::move(options));
    case DetectionLayout::kVoc:
      return PackDetection(source,
                           std::make_shared<const vision::VocDetection>(
                               detection->voc_root, detection->image_set, std::move(unused)),
                           out, std::move(options));
    case DetectionLayout::kYolo:
      return PackDetection(
          source,
          std::make_shared<const vision::YoloDetection>(detection->images, std::move(unused)),
          out, std::move(options));
  }
  return storage::PackSource(source, out, options);
}

}  // namespace feedline::cli
