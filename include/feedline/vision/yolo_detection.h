// YoloDetection: a Dataset in the YOLO layout (the one Ultralytics, YOLOv5
// and most exported datasets use): images under a folder whose path has an
// "images" part, and beside each one a label file at the same path with
// "labels" for "images" and ".txt" for its extension
// (data/images/train/0001.jpg -> data/labels/train/0001.txt). Each line of a
// label file is one object: "class cx cy w h" (its box: centre and size,
// normalized to the image's width and height), or "class x1 y1 x2 y2 ..."
// (a polygon of 3 or more normalized points, whose bounds are its box). An
// image without a label file has no objects (a background image).
//
// Samples are those of CocoDetection (docs/detection.md): the pipeline's
// "image", the objects' "boxes" (x0, y0, x1, y1 in output pixels),
// "labels" (the class), "area" (in source pixels), "iscrowd" (0), "masks"
// from the polygons (with masks = true; a box-only object has an empty
// mask), "image_id" (the sample's index) and "image_size", moved with the
// pixels by the same plan.
//
// A label file that cannot be read, a line that is not 5 numbers or a class
// and 3 or more points, a class that is not a whole number >= 0 or a
// coordinate outside [0, 1] (beyond a rounding slack) is a SampleError
// naming the label file and its line: the loader's error policy decides, as
// for a broken image.
//
// With options.keypoints (YOLO's pose layout, Ultralytics' kpt_shape) each
// line is 'class cx cy w h' and then K points of 2 (x y) or 3 (x y
// visibility) normalized numbers, and a sample also has "keypoints",
// float32 [n, K, 3] in output pixels.
//
// With options.mosaic a sample is YOLO's training mosaic of 4 images
// (docs/detection.md): "image_id" is its own image's index, "area" each
// object's in its own source pixels.
//
// Thread safety: immutable after construction; Get may be called from many
// threads at once.
//
// Example:
//   YoloDetection train("/data/coco128/images/train2017", TrainPipeline(640));
#ifndef FEEDLINE_VISION_YOLO_DETECTION_H_
#define FEEDLINE_VISION_YOLO_DETECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/vision/detection_record.h"
#include "feedline/vision/image_dataset.h"
#include "feedline/vision/mosaic.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/read_file.h"

namespace feedline::vision {

class MosaicImageCache;  // src/vision/mosaic_image_cache.h

struct YoloDetectionOptions {
  bool masks = false;  // draw each object's polygon ("masks")
  // Batches pad images to the batch's largest, rounded up to a multiple of
  // this (detection models' size_divisibility, 32 for most); 1: no rounding.
  // From 1 to 65536 (Error).
  int64_t size_divisibility = 1;
  ReadOptions read;
  // Each sample a mosaic of its image and 3 partners (feedline/vision/
  // mosaic.h), size x size. The pipeline then lists only what follows the
  // mosaic: RandomHorizontalFlip (the whole mosaic mirrored), colour steps,
  // RandomErasing and the output's dtype and layout (Error otherwise);
  // masks and keypoints are drawn and moved through the tiles.
  std::optional<MosaicOptions> mosaic;
  // YOLO pose labels: K keypoints a line (0: none; at most 4096), each of
  // keypoint_dims numbers: 2 (x y; a point with a negative coordinate is
  // unlabelled, as Ultralytics reads it) or 3 (x y visibility, 0, 1 or 2).
  // Written as "keypoints" float32 [n, K, 3]: x, y in output pixels, moved
  // by every geometric step, and the visibility (1 for a labelled point of
  // 2 numbers); an unlabelled one (0, 0, 0). In a mosaic a keypoint that
  // lands outside its tile's part of the output is unlabelled there.
  int keypoints = 0;
  int keypoint_dims = 3;
  // keypoint_flip[k]: the keypoint that takes k's place in a mirrored image
  // (Ultralytics' flip_idx); K entries, a permutation (Error otherwise);
  // empty: none changes place.
  std::vector<int32_t> keypoint_flip;
};

class FEEDLINE_EXPORT YoloDetection : public Dataset {
 public:
  // Every image (.jpg, .jpeg, .png, .webp) under `images_dir`, at any depth,
  // sorted by path. Throws Error naming the folder when it cannot be listed,
  // holds no image, or has no "images" part in its path (where the labels
  // would be is then unknown).
  YoloDetection(const std::string& images_dir, Pipeline pipeline,
                YoloDetectionOptions options = {});

  int64_t size() const override { return files_.size(); }
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

  const std::string& images_dir() const { return images_dir_; }
  // Where image `index`'s labels are read from.
  std::string LabelFile(int64_t index) const;
  const Pipeline& pipeline() const { return pipeline_; }
  const YoloDetectionOptions& options() const { return options_; }

 private:
  void GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const;

  std::string images_dir_;
  // images_dir_ made absolute and normal, with a trailing '/': where the
  // labels are is found from it once, not with a getcwd per sample.
  std::string absolute_dir_;
  ImageList files_;  // paths under images_dir_
  Pipeline pipeline_;
  YoloDetectionOptions options_;
  // With mosaic: the decoded images kept for the batch's other samples.
  std::shared_ptr<MosaicImageCache> mosaic_cache_;
};

// Label path for an image path: the last "/images/" part becomes
// "/labels/", the extension ".txt"; empty when the path has no such part.
FEEDLINE_EXPORT std::string YoloLabelPath(const std::string& image_path);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_YOLO_DETECTION_H_
