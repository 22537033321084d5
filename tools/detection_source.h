// Object detection data as a SOURCE of `bench`, `tune` and `verify`, in the
// three layouts the library reads (docs/detection.md):
// - COCO: the instances file, ANNOTATIONS.json, its images in the folder
//   COCO's layout puts them (annotations/instances_val2017.json ->
//   val2017/ beside annotations/);
// - Pascal VOC: an image set, VOC<year>/ImageSets/Main/<set>.txt, beside
//   VOC<year>/Annotations/;
// - YOLO: a folder of images with an `images` part in its path, whose
//   labels folder (`labels` for `images`) exists.
// The images go through the command's pipeline (train, val, decode) with
// their objects; `read` decodes nothing, so it is refused.
//
// Thread safety: pure functions; the datasets are immutable.
#ifndef FEEDLINE_TOOLS_DETECTION_SOURCE_H_
#define FEEDLINE_TOOLS_DETECTION_SOURCE_H_

#include <memory>
#include <optional>
#include <string>

#include "feedline/dataset.h"
#include "tools/source_limits.h"

namespace feedline::cli {

enum class DetectionLayout { kCoco, kVoc, kYolo };

struct DetectionSource {
  DetectionLayout layout = DetectionLayout::kCoco;
  std::string images;       // COCO: the images' folder; YOLO: SOURCE
  std::string annotations;  // COCO: the instances file
  std::string voc_root;     // VOC: the VOC<year> folder
  std::string image_set;    // VOC: the set's name ("train")
};

// `source` as detection data, or nullopt when it is in none of the layouts
// above. Throws UsageError naming SOURCE and what is missing when it is a
// COCO instances file whose images' folder is not where COCO puts it.
std::optional<DetectionSource> FindDetectionSource(const std::string& source);

// The dataset over `source` whose images go through `pipeline` (train, val
// or decode; train and val output images of `image_size` pixels). Throws
// UsageError for `read`, and for what the library finds wrong with the
// layout itself (an annotation file that does not parse, a class name VOC
// does not have), naming the file.
std::shared_ptr<const Dataset> OpenDetectionSource(const DetectionSource& source,
                                                   const std::string& pipeline, int image_size,
                                                   const SourceLimits& limits);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_DETECTION_SOURCE_H_
