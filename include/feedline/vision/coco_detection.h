// CocoDetection: a Dataset of COCO-format detection and instance
// segmentation data (CocoAnnotations), each image read, decoded and
// transformed by a Pipeline, its objects moved with its pixels
// (PlanGeometry): flips, resizes and crops move the boxes and the masks
// too, and masks are drawn from their polygons once, at the output size.
//
// A sample's fields, as torchvision's detection references build a target
// (ConvertCocoPolysToMask), each in output pixels:
//   "image"     the pipeline's output
//   "boxes"     f32 [n, 4], (x0, y0, x1, y1), clipped to the image
//   "labels"    i64 [n], the objects' category ids
//   "masks"     u8 [n, H, W], only with CocoDetectionOptions::masks
//   "image_id"  i64, the image's id in the file
//   "area"      f32 [n], as the file gives it
//   "iscrowd"   i64 [n]
//   "image_size" i64 [2], the output's (height, width): a batch pads images
//               to its largest, this says what each one is
// An object is dropped, as the references drop it, when it is a crowd
// (unless keep_crowd) or when its box, clipped to the image, has no width or
// height, before or after the transforms.
//
// Thread safety: immutable after construction; Get may be called from many
// threads at once.
//
// Example:
//   CocoDetection coco("/data/coco/train2017", "/data/coco/annotations/instances_train2017.json",
//                      Pipeline({Transform::RandomHorizontalFlip(0.5), Transform::ToCHW()},
//                               {.dtype = DType::kF32}));
#ifndef FEEDLINE_VISION_COCO_DETECTION_H_
#define FEEDLINE_VISION_COCO_DETECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/vision/detection_record.h"
#include "feedline/vision/coco.h"
#include "feedline/vision/mosaic.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/read_file.h"

namespace feedline::vision {

class MosaicImageCache;  // src/vision/mosaic_image_cache.h

struct CocoDetectionOptions {
  // Draw each object's mask ("masks").
  bool masks = false;
  // With masks: draw them at the source image's size, mirrored when the
  // image is, one for every object the transforms started with (a crop's
  // drops included), with "masks_size" i64 [2] their (height, width). What
  // torchvision's references' ssd and ssdlite presets hand out (their
  // RandomZoomOut and RandomIoUCrop leave masks as they are), for the
  // one-line swap; models that use masks want them at the output.
  bool source_masks = false;
  // Keep crowd objects (iscrowd 1); the references drop them for training.
  bool keep_crowd = false;
  // Leave out images with no annotation, or whose every box is at most 1
  // pixel wide or high, as the references' training set does
  // (_coco_remove_images_without_annotations); their evaluation keeps every
  // image.
  bool skip_empty = false;
  // Where the parsed annotation file is kept, so that the next start loads
  // it instead of parsing the JSON (annotation_index.h); "" keeps nothing.
  // DefaultAnnotationIndexDir() is the usual place (Python's default).
  std::string index_dir;
  // Batches pad images to the batch's largest, rounded up to a multiple of
  // this (detection models' size_divisibility, 32 for most); 1: no rounding.
  // From 1 to 65536 (Error).
  int64_t size_divisibility = 1;
  ReadOptions read;
  // Each sample YOLO's training mosaic of its image and 3 partners (other
  // samples; feedline/vision/mosaic.h), as YoloDetectionOptions::mosaic:
  // the pipeline lists only what follows it; masks are drawn through the
  // tiles, keypoints moved through them (source_masks is refused, Error).
  std::optional<MosaicOptions> mosaic;
  // Write each object's keypoints ("keypoints", float32 [objects, K, 3]:
  // x, y in output pixels, moved by every geometric step, and the
  // visibility; an unlabelled one (0, 0, 0)), K the most any annotation of
  // the file lists. Error when none lists any. In a mosaic a keypoint that
  // lands outside its tile's part of the output is unlabelled there.
  bool keypoints = false;
  // keypoint_flip[k]: the keypoint that takes k's place in a mirrored image
  // (COCO's people: left and right eyes, ears, shoulders, ...); K entries,
  // a permutation of 0..K-1 (Error otherwise); empty: none changes place.
  std::vector<int32_t> keypoint_flip;
};

class FEEDLINE_EXPORT CocoDetection : public Dataset {
 public:
  // Images are read from `root`/file_name. Throws Error naming the file for
  // an annotation file that cannot be read or parsed (CocoAnnotations).
  CocoDetection(std::string root, const std::string& annotation_file, Pipeline pipeline,
                CocoDetectionOptions options = {});
  CocoDetection(std::string root, std::shared_ptr<const CocoAnnotations> annotations,
                Pipeline pipeline, CocoDetectionOptions options = {});

  int64_t size() const override { return static_cast<int64_t>(images_.size()); }
  // Reads the image, runs the pipeline into "image" and writes its objects.
  // Throws SampleError naming the file (ReadFile, DecodeImage).
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  // Sample `index`'s annotations as a detection pack stores them
  // (detection_record.h), for its image of `height` x `width` pixels (its
  // header's): what `feedline pack` writes beside the image, from which
  // DetectionShardDataset gives this dataset's samples.
  DetectionRecord Record(int64_t index, int height, int width) const;
  // The per-object fields: padded in every batch, so that each has
  // "boxes_lengths" whatever its images hold.
  std::vector<std::string> PaddedFields() const override;
  // "image", when size_divisibility > 1.
  std::vector<PadMultiple> PadMultiples() const override;

  const std::string& root() const { return root_; }
  // The file the annotations were read from ("" when they were given).
  const std::string& annotation_file() const { return annotation_file_; }
  const CocoAnnotations& annotations() const { return *annotations_; }
  const Pipeline& pipeline() const { return pipeline_; }
  const CocoDetectionOptions& options() const { return options_; }
  // The annotation file's image index of sample `index`.
  int64_t image_index(int64_t index) const;

 private:
  std::string root_;
  std::string annotation_file_;
  std::shared_ptr<const CocoAnnotations> annotations_;
  Pipeline pipeline_;
  CocoDetectionOptions options_;
  std::vector<int64_t> images_;  // sample i is annotations_->image(images_[i])
  int keypoint_count_ = 0;       // K, with options_.keypoints
  // With mosaic: the decoded images kept for the batch's other samples.
  std::shared_ptr<MosaicImageCache> mosaic_cache_;

  void GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const;
  // Sets keypoint_count_; throws Error for keypoints it cannot give.
  void CheckKeypoints();
};

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_COCO_DETECTION_H_
