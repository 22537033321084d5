// VocAnnotations: a Pascal VOC image set (VOC2007, VOC2012 and the many
// datasets exported in its layout): the ids listed in
// <root>/ImageSets/Main/<image_set>.txt, each image at
// <root>/JPEGImages/<id>.jpg and its objects in <root>/Annotations/<id>.xml,
// parsed once into flat arrays: per image its size and a range of objects;
// per object its box, class, and "difficult" and "truncated" flags.
//
// Boxes: the file's <bndbox> counts pixels from 1 and includes xmax and
// ymax, so the box that covers those pixels is (xmin - 1, ymin - 1, xmax,
// ymax) in pixel edges counted from 0, the convention of COCO's boxes and of
// every transform here. (PaddleDetection and MMDetection take the numbers
// as they are, a shift of one pixel at the top left.)
// Classes: an object's label is its <name>'s index in `classes`
// (VocAnnotations::DefaultClasses by default: VOC's 20 in the order every VOC
// tool uses); a name not in the list is an error naming the file.
//
// Thread safety: immutable after Read; every accessor may be called from
// many threads at once.
//
// Example:
//   VocAnnotations voc = VocAnnotations::Read("VOCdevkit/VOC2012", "train");
//   for (const VocObject& o : voc.objects(0)) { ... o.box ... o.label ... }
#ifndef FEEDLINE_VISION_VOC_H_
#define FEEDLINE_VISION_VOC_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"

namespace feedline::vision {

struct VocObject {
  std::array<float, 4> box{};  // x0, y0, x1, y1 in pixel edges from 0 (above)
  int64_t label = 0;           // index of its name in the classes
  bool difficult = false;
  bool truncated = false;
};

struct VocImage {
  int height = 0;  // as <size> gives it (0 when the file has none)
  int width = 0;
  uint32_t first_object = 0;
  uint32_t num_objects = 0;
};

class FEEDLINE_EXPORT VocAnnotations {
 public:
  // VOC's 20 classes, in the order of its devkit.
  static const std::vector<std::string>& DefaultClasses();

  // No images yet (Add adds them).
  explicit VocAnnotations(std::vector<std::string> classes = DefaultClasses());

  // Reads the image set `image_set` ("train", "val", "trainval", "test") of
  // the VOC folder `root` (the one holding JPEGImages, Annotations and
  // ImageSets). Throws Error naming the file and the reason: a list or an
  // annotation that cannot be read, XML that does not parse (with the
  // offset), a box that is not four numbers with xmin <= xmax and
  // ymin <= ymax, or a class not in `classes`.
  static VocAnnotations Read(const std::string& root, const std::string& image_set,
                             std::vector<std::string> classes = DefaultClasses());

  // One annotation file's objects and size from its text, appended;
  // `source` names it in errors. Throws Error as Read does.
  void Add(std::string id, std::string_view xml, std::string_view source);

  int64_t num_images() const { return static_cast<int64_t>(images_.size()); }
  const VocImage& image(int64_t i) const { return images_[static_cast<size_t>(i)]; }
  // The image's id, as the image set lists it (its files are <id>.jpg and
  // <id>.xml).
  const std::string& id(int64_t i) const { return ids_[static_cast<size_t>(i)]; }
  std::span<const VocObject> objects(int64_t image) const;
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::vector<std::string> classes_;
  std::vector<VocImage> images_;
  std::vector<std::string> ids_;
  std::vector<VocObject> objects_;
};

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_VOC_H_
