// CocoAnnotations: a COCO "instances" annotation file (the JSON of
// images, annotations and categories that COCO, LVIS, Objects365 and most
// converted detection datasets use), parsed once into flat arrays: per
// image its file, size and a range of objects; per object its box,
// category, crowd flag, area and segmentation (polygons, or a run-length
// mask). A million objects cost a few flat vectors, not a million JSON
// nodes, and every sample reads its objects without touching JSON again.
//
// Accepted as COCO's own tools accept it: "bbox" [x, y, width, height] in
// pixels; "segmentation" a list of polygons [x0, y0, x1, y1, ...], or an RLE
// {"size": [h, w], "counts": [...]} (uncompressed) or {"counts": "..."}
// (COCO's compressed string); an annotation without "segmentation" has none;
// "keypoints" (COCO's person keypoints, optional) a list of x, y, visibility
// triples in pixels.
// Objects keep the file's order within their image; images keep the file's
// order.
//
// Thread safety: immutable after Read; every accessor may be called from
// many threads at once.
//
// Example:
//   CocoAnnotations coco = CocoAnnotations::Read("annotations/instances_train2017.json");
//   for (const CocoObject& o : coco.objects(0)) { ... o.box ... }
#ifndef FEEDLINE_VISION_COCO_H_
#define FEEDLINE_VISION_COCO_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"

namespace feedline::vision {

struct CocoImage {
  int64_t id = 0;
  int height = 0;
  int width = 0;
  uint32_t first_object = 0;  // objects(image) is [first_object, first_object + num_objects)
  uint32_t num_objects = 0;
};

enum class CocoSegmentation : uint8_t { kNone, kPolygons, kRle };

struct CocoObject {
  std::array<float, 4> box{};  // x, y, width, height, as in the file
  int64_t category = 0;
  float area = 0;
  bool crowd = false;
  CocoSegmentation segmentation = CocoSegmentation::kNone;
  // kPolygons: polygons [first, first + count) (CocoAnnotations::polygon);
  // kRle: the run-length mask `first` (CocoAnnotations::rle).
  uint32_t first = 0;
  uint32_t count = 0;
  // Its keypoints (CocoAnnotations::keypoints): how many the file lists
  // (COCO's own "num_keypoints" counts only the labelled ones), 0 without
  // "keypoints".
  uint32_t first_keypoint = 0;
  uint32_t keypoint_count = 0;
};

// A mask as runs of alternating 0s and 1s (starting with 0s) over its
// pixels in column-major order, as COCO stores it.
struct CocoRle {
  int height = 0;
  int width = 0;
  std::vector<uint32_t> counts;
};

class FEEDLINE_EXPORT CocoAnnotations {
 public:
  // Reads and parses `path`. Throws Error naming the file and the reason: it
  // cannot be read, it is not JSON (with the offset), or a field is missing
  // or has the wrong type (naming the image or annotation). An annotation
  // of an image id the file does not list is an error, as in COCO's tools.
  static CocoAnnotations Read(const std::string& path);
  // The same from the file's bytes; `source` names it in errors.
  static CocoAnnotations Parse(std::string_view json, std::string_view source);

  // The parsed arrays as bytes (an annotation index, coco_index.cc), and
  // back: FromIndex gives what Parse gave for the same file. Every count and
  // offset of `bytes` is checked, so a damaged index is an Error naming
  // `source`, never a crash or a wrong object.
  std::string ToIndex() const;
  static CocoAnnotations FromIndex(std::string_view bytes, std::string_view source);

  int64_t num_images() const { return static_cast<int64_t>(images_.size()); }
  const CocoImage& image(int64_t i) const { return images_[static_cast<size_t>(i)]; }
  std::string_view file_name(int64_t i) const;
  std::span<const CocoObject> objects(int64_t image) const;
  // Polygon k's coordinates: x0, y0, x1, y1, ... (doubles, as the file
  // gives them: COCO's tools draw from them unrounded).
  std::span<const double> polygon(uint32_t k) const;
  const CocoRle& rle(uint32_t k) const { return rles_[k]; }
  // Object o's keypoints: x, y, visibility for each, as the file gives them.
  std::span<const float> keypoints(const CocoObject& o) const {
    return std::span<const float>(keypoint_values_).subspan(3 * size_t{o.first_keypoint},
                                                             3 * size_t{o.keypoint_count});
  }
  // (id, name) of each category, in the file's order.
  const std::vector<std::pair<int64_t, std::string>>& categories() const { return categories_; }

 private:
  std::vector<CocoImage> images_;
  std::string names_;                 // every file name, back to back
  std::vector<uint64_t> name_ends_;  // file_name(i) ends at name_ends_[i]
  std::vector<CocoObject> objects_;
  std::vector<double> coordinates_;
  std::vector<uint64_t> polygon_ends_;  // polygon k ends at polygon_ends_[k] in coordinates_
  std::vector<CocoRle> rles_;
  std::vector<float> keypoint_values_;  // x, y, visibility of every object's keypoints
  std::vector<std::pair<int64_t, std::string>> categories_;
};

// COCO's compressed RLE string (the "counts" of a compressed mask) as runs.
// Throws Error naming `source` if it is malformed or its runs do not add up
// to height * width.
FEEDLINE_EXPORT std::vector<uint32_t> DecodeCocoRleString(std::string_view counts, int height,
                                                          int width, std::string_view source);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_COCO_H_
