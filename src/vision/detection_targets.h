// The fields of a detection sample's objects (docs/detection.md), written
// the same way whatever the annotations came from (COCO, VOC, YOLO): each
// object given in the source image's pixels, mapped through the image's
// PipelinePlan, dropped when nothing of its box is left in the output or
// when a RandomIoUCrop did not keep it (PipelinePlan::kept_boxes), and
// written as "boxes" f32 [n, 4], "labels" i64 [n], "area" f32 [n],
// "iscrowd" i64 [n], "masks" u8 [n, H, W] (when asked for) and
// "image_size" i64 [2].
//
// Thread safety: pure functions.
#ifndef FEEDLINE_SRC_VISION_DETECTION_TARGETS_H_
#define FEEDLINE_SRC_VISION_DETECTION_TARGETS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/sample.h"
#include "feedline/vision/coco.h"
#include "feedline/vision/pipeline.h"
#include "feedline/vision/plan_geometry.h"
#include "feedline/vision/read_file.h"

namespace feedline::vision {

// One object of an image, in the source image's pixels.
struct ImageObject {
  std::array<float, 4> box{};  // x0, y0, x1, y1
  int64_t category = 0;
  float area = 0;
  bool crowd = false;
  // Its index in the PlanBoxes the image was planned with (what a
  // RandomIoUCrop kept: PipelinePlan::kept_boxes); -1 when not given.
  int32_t plan_box = -1;
};

// The names of the per-object fields (padded in every batch).
std::vector<std::string> DetectionObjectFields(bool masks, bool keypoints = false);

// Throws Error naming `dataset` if `pipeline` has a step that moves pixels
// without telling the plan (the AutoAugment family's shears, translations
// and rotations): the objects could not follow them.
void CheckDetectionPipeline(const Pipeline& pipeline, const std::string& dataset);

// What every detection dataset checks of its options, naming `dataset`: a
// max_file_bytes > 0, a size_divisibility from 1 to 65536, and its pipeline
// (CheckDetectionPipeline).
void CheckDetectionOptions(const std::string& dataset, const Pipeline& pipeline,
                           const ReadOptions& read, int64_t size_divisibility);

// The image field's pad multiples for `size_divisibility` (> 1): its height
// and width, in the pipeline's layout; none for 1.
std::vector<PadMultiple> DetectionImagePadding(const Pipeline& pipeline, int64_t size_divisibility);

// Writes "boxes", "labels", "area" and "iscrowd" of `objects`, whose boxes
// are in output pixels already.
void WriteObjectFields(std::span<const ImageObject> objects, Sample& out);

// Clamps the boxes of `objects` (source pixels, as the annotations give
// them) to the image `plan` read, and drops those left without a width or a
// height, as the references' ConvertCocoPolysToMask; returns the index, in
// `objects` as given, of each one kept. (The image's size comes from its
// header, so they are clamped once it is read; Plan clamps the boxes a
// RandomIoUCrop chooses from the same way.)
std::vector<size_t> ClampToImage(const PipelinePlan& plan, std::vector<ImageObject>& objects);

// Throws SampleError naming `source` (sample `index`) unless `rle` is of the
// image's size: a mask of another size is not this image's (and its size is
// not trusted for an allocation).
void CheckMaskSize(const CocoRle& rle, const PipelinePlan& plan, std::string_view source,
                   int64_t index);

// Draws an object's box (source pixels) as its mask: what an object without
// a segmentation gets, so that each mask covers its object.
void FillBox(const std::array<float, 4>& box, const PlanGeometry& geometry, uint8_t* mask);

// Where masks are drawn: at the output, following every geometric step
// (kOutput), or at the source image's size, mirrored when the image is, one
// for every object given (kSourceMirrored), plus "masks_size" i64 [2], their
// (height, width): what torchvision's references' ssd and ssdlite presets
// hand out, their RandomZoomOut and RandomIoUCrop leaving masks as they
// are.
enum class MaskPlacement : uint8_t { kOutput, kSourceMirrored };

// Writes the fields above into `out` for the objects whose box, clipped to
// the output, keeps a width and a height. With `masks`, draw(i, geometry,
// mask) draws object i's mask into `mask` (uint8 [H, W], zeroed) through
// `geometry`.
using DrawMask = std::function<void(size_t object, const PlanGeometry& geometry, uint8_t* mask)>;

// The objects' keypoints, for "keypoints" (float32 [objects, count, 3]: x, y
// in output pixels and the visibility, as COCO gives it). source(i): object
// i's x, y, visibility triples in source pixels (fewer than `count`: the
// rest are unlabelled). flip[k]: the keypoint that takes k's place when the
// image is mirrored (a person's left and right), empty when none does. An
// unlabelled keypoint (visibility 0) is (0, 0, 0), as COCO writes it.
struct KeypointTargets {
  int count = 0;
  std::vector<int32_t> flip;
  std::function<std::span<const float>(size_t object)> source;
};

// Writes one object's `count` keypoints into `row` (x, y, visibility each):
// place k takes given keypoint flip[k] when `mirrored` (k otherwise, and
// when flip is empty), at map(x, y); one unlabelled (visibility 0, or not
// given) or that map places nowhere (nullopt) is (0, 0, 0). The one rule
// for every dataset's keypoints, a mosaic's included.
using MapKeypoint = std::function<std::optional<std::array<double, 2>>(double x, double y)>;
void WriteKeypointRow(std::span<const float> given, int count, const std::vector<int32_t>& flip,
                      bool mirrored, const MapKeypoint& map, float* row);

// Throws Error naming `dataset` unless `flip` is empty or a permutation of
// the `count` keypoints (KeypointTargets::flip).
void CheckKeypointFlip(const std::vector<int32_t>& flip, int count, const std::string& dataset);

void WriteDetectionTargets(const PipelinePlan& plan, std::span<const ImageObject> objects,
                           bool masks, const DrawMask& draw, Sample& out,
                           MaskPlacement placement = MaskPlacement::kOutput,
                           const KeypointTargets* keypoints = nullptr);

}  // namespace feedline::vision

#endif  // FEEDLINE_SRC_VISION_DETECTION_TARGETS_H_
