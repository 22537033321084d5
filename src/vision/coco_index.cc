// CocoAnnotations' index form: its flat arrays written field by field
// (little-endian, as this library's machines are), read back with every
// count checked against the bytes left and every offset against the array
// it points into. Loading an index costs a few large copies where parsing
// the JSON costs a pass over every number of it.
#include <cstring>
#include <string>
#include <type_traits>

#include "feedline/error.h"
#include "feedline/vision/coco.h"

namespace feedline::vision {
namespace {

// "FLCOCO" and the format's version: an index of another version is not read.
constexpr char kMagic[8] = {'F', 'L', 'C', 'O', 'C', 'O', 'I', '2'};  // 2: keypoints

template <typename T>
void Put(std::string& out, T value) {
  static_assert(std::is_arithmetic_v<T>);
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
void PutArray(std::string& out, const std::vector<T>& values) {
  static_assert(std::is_arithmetic_v<T>);
  Put<uint64_t>(out, values.size());
  if (!values.empty()) {
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
}

void PutString(std::string& out, std::string_view text) {
  Put<uint64_t>(out, text.size());
  out.append(text);
}

class IndexReader {
 public:
  IndexReader(std::string_view bytes, std::string_view source) : rest_(bytes), source_(source) {}

  [[noreturn]] void Fail(const std::string& why) const {
    throw Error("COCO annotation index " + std::string(source_) + ": " + why);
  }

  template <typename T>
  T Take() {
    T value;
    if (rest_.size() < sizeof(T)) Fail("ends early");
    std::memcpy(&value, rest_.data(), sizeof(T));
    rest_.remove_prefix(sizeof(T));
    return value;
  }

  // A count of items of at least `item_bytes` each: no more than the bytes
  // left can hold, so that nothing is allocated for a count the file lacks.
  size_t Count(size_t item_bytes) {
    const uint64_t n = Take<uint64_t>();
    if (n > rest_.size() / item_bytes) Fail("a count is larger than the index");
    return static_cast<size_t>(n);
  }

  template <typename T>
  void TakeArray(std::vector<T>& out) {
    const size_t n = Count(sizeof(T));
    out.resize(n);
    if (n > 0) std::memcpy(out.data(), rest_.data(), n * sizeof(T));
    rest_.remove_prefix(n * sizeof(T));
  }

  std::string TakeString() {
    const size_t n = Count(1);
    std::string text(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return text;
  }

  bool done() const { return rest_.empty(); }

 private:
  std::string_view rest_;
  std::string_view source_;
};

// Ends of consecutive ranges: non-decreasing, the last at most `limit`.
bool AreEnds(const std::vector<uint64_t>& ends, size_t limit) {
  uint64_t previous = 0;
  for (uint64_t end : ends) {
    if (end < previous) return false;
    previous = end;
  }
  return previous <= limit;
}

}  // namespace

std::string CocoAnnotations::ToIndex() const {
  std::string out(kMagic, sizeof(kMagic));
  Put<uint64_t>(out, images_.size());
  for (const CocoImage& im : images_) {
    Put(out, im.id);
    Put<int32_t>(out, im.height);
    Put<int32_t>(out, im.width);
    Put(out, im.first_object);
    Put(out, im.num_objects);
  }
  PutString(out, names_);
  PutArray(out, name_ends_);
  Put<uint64_t>(out, objects_.size());
  for (const CocoObject& o : objects_) {
    for (float v : o.box) Put(out, v);
    Put(out, o.category);
    Put(out, o.area);
    Put<uint8_t>(out, o.crowd ? 1 : 0);
    Put<uint8_t>(out, static_cast<uint8_t>(o.segmentation));
    Put(out, o.first);
    Put(out, o.count);
    Put(out, o.first_keypoint);
    Put(out, o.keypoint_count);
  }
  PutArray(out, coordinates_);
  PutArray(out, polygon_ends_);
  Put<uint64_t>(out, rles_.size());
  for (const CocoRle& rle : rles_) {
    Put<int32_t>(out, rle.height);
    Put<int32_t>(out, rle.width);
    PutArray(out, rle.counts);
  }
  PutArray(out, keypoint_values_);
  Put<uint64_t>(out, categories_.size());
  for (const auto& [id, name] : categories_) {
    Put(out, id);
    PutString(out, name);
  }
  return out;
}

CocoAnnotations CocoAnnotations::FromIndex(std::string_view bytes, std::string_view source) {
  IndexReader in(bytes, source);
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    in.Fail("not an index of this version");
  }
  for (size_t i = 0; i < sizeof(kMagic); ++i) in.Take<char>();
  CocoAnnotations out;
  out.images_.resize(in.Count(24));
  for (CocoImage& im : out.images_) {
    im.id = in.Take<int64_t>();
    im.height = in.Take<int32_t>();
    im.width = in.Take<int32_t>();
    im.first_object = in.Take<uint32_t>();
    im.num_objects = in.Take<uint32_t>();
    if (im.height < 0 || im.width < 0) in.Fail("an image has a negative size");
  }
  out.names_ = in.TakeString();
  in.TakeArray(out.name_ends_);
  if (out.name_ends_.size() != out.images_.size() || !AreEnds(out.name_ends_, out.names_.size())) {
    in.Fail("the file names do not match the images");
  }
  out.objects_.resize(in.Count(42));
  for (CocoObject& o : out.objects_) {
    for (float& v : o.box) v = in.Take<float>();
    o.category = in.Take<int64_t>();
    o.area = in.Take<float>();
    const uint8_t crowd = in.Take<uint8_t>();
    const uint8_t segmentation = in.Take<uint8_t>();
    if (crowd > 1 || segmentation > static_cast<uint8_t>(CocoSegmentation::kRle)) {
      in.Fail("an object has an unknown flag");
    }
    o.crowd = crowd == 1;
    o.segmentation = static_cast<CocoSegmentation>(segmentation);
    o.first = in.Take<uint32_t>();
    o.count = in.Take<uint32_t>();
    o.first_keypoint = in.Take<uint32_t>();
    o.keypoint_count = in.Take<uint32_t>();
  }
  in.TakeArray(out.coordinates_);
  in.TakeArray(out.polygon_ends_);
  if (!AreEnds(out.polygon_ends_, out.coordinates_.size())) in.Fail("a polygon is out of range");
  for (size_t k = 0; k < out.polygon_ends_.size(); ++k) {
    if ((out.polygon_ends_[k] - (k == 0 ? 0 : out.polygon_ends_[k - 1])) % 2 != 0) {
      in.Fail("a polygon is not x, y pairs");
    }
  }
  out.rles_.resize(in.Count(16));
  for (CocoRle& rle : out.rles_) {
    rle.height = in.Take<int32_t>();
    rle.width = in.Take<int32_t>();
    in.TakeArray(rle.counts);
    uint64_t total = 0;
    for (uint32_t run : rle.counts) total += run;
    if (rle.height < 0 || rle.width < 0 ||
        total != static_cast<uint64_t>(rle.height) * static_cast<uint64_t>(rle.width)) {
      in.Fail("a mask's runs do not cover its height x width");
    }
  }
  in.TakeArray(out.keypoint_values_);
  if (out.keypoint_values_.size() % 3 != 0) in.Fail("keypoints are not x, y, visibility triples");
  out.categories_.resize(in.Count(16));
  for (auto& [id, name] : out.categories_) {
    id = in.Take<int64_t>();
    name = in.TakeString();
  }
  if (!in.done()) in.Fail("has bytes after its end");
  for (const CocoImage& im : out.images_) {
    if (uint64_t{im.first_object} + im.num_objects > out.objects_.size()) {
      in.Fail("an image's objects are out of range");
    }
  }
  for (const CocoObject& o : out.objects_) {
    const bool fits =
        o.segmentation == CocoSegmentation::kPolygons
            ? uint64_t{o.first} + o.count <= out.polygon_ends_.size()
            : o.segmentation != CocoSegmentation::kRle || o.first < out.rles_.size();
    if (!fits) in.Fail("an object's segmentation is out of range");
    if ((uint64_t{o.first_keypoint} + o.keypoint_count) * 3 > out.keypoint_values_.size()) {
      in.Fail("an object's keypoints are out of range");
    }
  }
  return out;
}

}  // namespace feedline::vision
