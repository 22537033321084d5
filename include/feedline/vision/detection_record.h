// DetectionRecord: one image's annotations in the compact binary form that
// `feedline pack` stores beside the image in a detection pack (KEY.det,
// docs/storage.md), whatever layout they came from (COCO, VOC, YOLO): the
// image's id and each object's box, category, area, crowd flag and
// segmentation (polygons or a run-length mask).
//
// One convention for every layout: boxes are (x0, y0, x1, y1) in the source
// image's pixels, as the detection datasets hand them to the pipeline
// (a COCO box's x + width computed as CocoDetection computes it; a YOLO box
// as YoloDetection converts it, clamped to the image; a VOC box's edges
// counted from 0), so that a pack read back gives the source dataset's
// samples bit for bit. Polygons are in source pixels (doubles, as the file
// gives them); a run-length mask keeps COCO's column-major runs.
//
// Layout (little-endian), version 1:
//   magic "FLDR" (4), version u16 (1), reserved u16 (0), image id i64,
//   object, polygon, coordinate, run-length mask and run counts, u32 each
//   objects, 40 bytes each: x0 y0 x1 y1 f32, category i64, area f32,
//     crowd u8 (0 or 1), segmentation u8 (0 none, 1 polygons, 2 mask),
//     reserved u16 (0), first u32, count u32 (polygons [first, first +
//     count), or the mask `first` with count 1)
//   polygon ends u32 (the coordinates before the end of each polygon)
//   masks, 12 bytes each: height u32, width u32, runs u32
//   coordinates f64, then runs u32
// Decoding checks every count, range and value, so a damaged record is an
// Error naming it, never a crash or a wrong object.
//
// Thread safety: values and pure functions.
#ifndef FEEDLINE_VISION_DETECTION_RECORD_H_
#define FEEDLINE_VISION_DETECTION_RECORD_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"
#include "feedline/vision/coco.h"

namespace feedline::vision {

inline constexpr uint16_t kDetectionRecordVersion = 1;

struct DetectionObject {
  std::array<float, 4> box{};  // x0, y0, x1, y1 in source pixels
  int64_t category = 0;
  float area = 0;
  bool crowd = false;  // COCO's iscrowd, VOC's difficult
  CocoSegmentation segmentation = CocoSegmentation::kNone;
  uint32_t first = 0;  // as CocoObject: polygons [first, first + count), or mask `first`
  uint32_t count = 0;
};

struct FEEDLINE_EXPORT DetectionRecord {
  int64_t image_id = 0;
  std::vector<DetectionObject> objects;
  std::vector<double> coordinates;     // every polygon's x, y pairs back to back
  std::vector<uint32_t> polygon_ends;  // polygon k ends at polygon_ends[k] in coordinates
  std::vector<CocoRle> masks;
  // Whether an object's box is over 1 pixel wide and high (the references'
  // test for an image worth training on, skip_empty). Not part of the
  // record's bytes: the pack keeps it in the shard index, so that a reader
  // knows it without reading the record.
  bool has_usable_box = false;
  // The image's size as the source lists it (COCO's and VOC's annotation),
  // or as the image's header gives it where the source lists none (YOLO, a
  // VOC file without <size>). Not part of the record's bytes either: the
  // index keeps it, so that images are grouped by aspect ratio unread.
  int image_height = 0;
  int image_width = 0;

  std::span<const double> polygon(uint32_t k) const;
  // Adds a polygon (x, y pairs) and returns its number.
  uint32_t AddPolygon(std::span<const double> xy);
};

// The record's bytes. Throws Error if an object's segmentation points past
// the polygons or masks, or a count passes 2^32 - 1.
FEEDLINE_EXPORT std::string EncodeDetectionRecord(const DetectionRecord& record);

// Parses a record's bytes; `source` starts every message. Throws
// Error("SOURCE: annotations: <what is wrong>") for another magic or
// version, a size that is not the one the counts give, or a value out of
// range (a crowd flag not 0 or 1, an unknown segmentation, a polygon or mask
// outside the arrays, a polygon of an odd number of coordinates, a mask
// whose runs do not cover height x width, a number that is not finite).
FEEDLINE_EXPORT DetectionRecord DecodeDetectionRecord(std::span<const uint8_t> bytes,
                                                      std::string_view source);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_DETECTION_RECORD_H_
