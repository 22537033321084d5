// VocDetection: a Dataset of a Pascal VOC image set (VocAnnotations), each
// image read from <root>/JPEGImages/<id>.jpg, decoded and transformed by a
// Pipeline, its boxes moved with its pixels (PlanGeometry).
//
// Samples are those of CocoDetection (docs/detection.md): "image", "boxes"
// (x0, y0, x1, y1 in output pixels), "labels" (the class's index in the
// annotations' classes), "area" (the box's, in source pixels), "iscrowd",
// "image_id" (the sample's index) and "image_size". A "difficult" object is
// left out unless keep_difficult; a kept one has iscrowd 1, which is what
// VOC's evaluation does with it and what COCO's evaluation (torchvision's
// references evaluate through pycocotools) does with a crowd: neither a hit
// nor a miss. VOC has no instance polygons, so there are no masks.
//
// With options.mosaic a sample is YOLO's training mosaic of 4 images
// (feedline/vision/mosaic.h), as YoloDetection's.
//
// Thread safety: immutable after construction; Get may be called from many
// threads at once.
//
// Example:
//   VocDetection train("/data/VOCdevkit/VOC2012", "train",
//                      Pipeline({Transform::RandomHorizontalFlip(0.5), Transform::ToCHW()},
//                               {.dtype = DType::kF32}));
#ifndef FEEDLINE_VISION_VOC_DETECTION_H_
#define FEEDLINE_VISION_VOC_DETECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/vision/detection_record.h"
#include "feedline/vision/mosaic.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/read_file.h"
#include "feedline/vision/voc.h"

namespace feedline::vision {

class MosaicImageCache;  // src/vision/mosaic_image_cache.h

struct VocDetectionOptions {
  // Keep the objects marked difficult (as iscrowd 1); training leaves them out.
  bool keep_difficult = false;
  // The class names, a label being an index in it (VOC's 20 when empty).
  std::vector<std::string> classes;
  // Batches pad images to the batch's largest, rounded up to a multiple of
  // this (detection models' size_divisibility, 32 for most); 1: no rounding.
  // From 1 to 65536 (Error).
  int64_t size_divisibility = 1;
  ReadOptions read;
  // Each sample YOLO's training mosaic of its image and 3 partners (other
  // samples; feedline/vision/mosaic.h), as YoloDetectionOptions::mosaic.
  std::optional<MosaicOptions> mosaic;
};

class FEEDLINE_EXPORT VocDetection : public Dataset {
 public:
  // `root` is the folder holding JPEGImages, Annotations and ImageSets
  // (VOCdevkit/VOC2012). Throws Error naming the file for an image set or
  // annotation that cannot be read or parsed (VocAnnotations::Read).
  VocDetection(std::string root, const std::string& image_set, Pipeline pipeline,
               VocDetectionOptions options = {});

  int64_t size() const override { return annotations_->num_images(); }
  // Reads the image, runs the pipeline into "image" and writes its objects.
  // Throws SampleError naming the file (ReadFile, DecodeImage).
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  // Sample `index`'s annotations as a detection pack stores them
  // (detection_record.h), for its image of `height` x `width` pixels (its
  // header's): what `feedline pack` writes beside the image, from which
  // DetectionShardDataset gives this dataset's samples.
  DetectionRecord Record(int64_t index, int height, int width) const;
  std::vector<std::string> PaddedFields() const override;
  // "image", when size_divisibility > 1.
  std::vector<PadMultiple> PadMultiples() const override;

  const std::string& root() const { return root_; }
  const std::string& image_set() const { return image_set_; }
  const VocAnnotations& annotations() const { return *annotations_; }
  const Pipeline& pipeline() const { return pipeline_; }
  const VocDetectionOptions& options() const { return options_; }

 private:
  void GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const;

  std::string root_;
  std::string image_set_;
  std::shared_ptr<const VocAnnotations> annotations_;
  Pipeline pipeline_;
  VocDetectionOptions options_;
  // With mosaic: the decoded images kept for the batch's other samples.
  std::shared_ptr<MosaicImageCache> mosaic_cache_;
};

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_VOC_DETECTION_H_
