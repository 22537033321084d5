#include "feedline/vision/coco.h"

#include <simdjson.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// The most keypoints an object may list (COCO's people have 17, whole-body
// sets 133): a bound for the per-object arrays made from them.
constexpr size_t kMaxKeypoints = 4096;

// Errors name the file and where in it.
class Context {
 public:
  explicit Context(std::string_view source) : source_(source) {}
  [[noreturn]] void Fail(const std::string& where, const std::string& why) const {
    throw Error("COCO annotations " + std::string(source_) + ": " + where + ": " + why);
  }

 private:
  std::string_view source_;
};

bool Has(const object& o, const char* name) { return !o.at_key(name).error(); }

element Member(const object& o, const char* name, const std::string& where, const Context& ctx) {
  element value;
  if (o.at_key(name).get(value)) ctx.Fail(where, std::string("has no \"") + name + "\"");
  return value;
}

object Object(const element& v, const std::string& where, const Context& ctx) {
  object o;
  if (v.get(o)) ctx.Fail(where, "is not an object");
  return o;
}

array Array(const element& v, const std::string& where, const std::string& what,
            const Context& ctx) {
  array a;
  if (v.get(a)) ctx.Fail(where, what + " is not a list");
  return a;
}

int64_t Integer(const element& v, const char* name, const std::string& where, const Context& ctx) {
  int64_t i;
  if (!v.get(i)) return i;
  // Some converters write ids and sizes as 12.0.
  double d;
  if (!v.get(d) && std::isfinite(d) && std::fabs(d) < 9e15 && d == std::trunc(d)) {
    return static_cast<int64_t>(d);
  }
  ctx.Fail(where, std::string("\"") + name + "\" is not an integer");
}

double Number(const element& v, const char* name, const std::string& where, const Context& ctx) {
  double d;
  if (v.get(d)) ctx.Fail(where, std::string("\"") + name + "\" is not a number");
  return d;
}

int Size(const element& v, const char* name, const std::string& where, const Context& ctx) {
  const int64_t n = Integer(v, name, where, ctx);
  if (n < 0 || n > (1 << 30)) ctx.Fail(where, std::string("\"") + name + "\" is out of range");
  return static_cast<int>(n);
}

std::string_view String(const element& v, const char* name, const std::string& where,
                        const Context& ctx) {
  std::string_view text;
  if (v.get(text)) ctx.Fail(where, std::string("\"") + name + "\" is not a string");
  return text;
}

}  // namespace

std::vector<uint32_t> DecodeCocoRleString(std::string_view counts, int height, int width,
                                          std::string_view source) {
  // COCO's format (its maskApi's rleFrString): each count is a little-endian
  // run of 5-bit groups, offset by 48 into printable characters, the
  // 0x20 bit meaning "more follows" and the last group's 0x10 bit its sign;
  // from the third count on, each is stored as the difference to the count
  // two before it.
  std::vector<int64_t> runs;
  size_t p = 0;
  while (p < counts.size()) {
    int64_t x = 0;
    int k = 0;
    bool more = true;
    while (more) {
      if (p >= counts.size() || k >= 12) {
        throw Error("COCO mask " + std::string(source) + ": its compressed counts end inside a count");
      }
      const int c = static_cast<unsigned char>(counts[p]) - 48;
      if (c < 0 || c > 63) {
        char shown[8];
        std::snprintf(shown, sizeof(shown), "0x%02x", static_cast<unsigned char>(counts[p]));
        throw Error("COCO mask " + std::string(source) + ": its compressed counts hold a character " +
                    shown + " outside the format");
      }
      x |= static_cast<int64_t>(c & 0x1f) << (5 * k);
      more = (c & 0x20) != 0;
      ++p;
      ++k;
      if (!more && (c & 0x10)) x |= -(int64_t{1} << (5 * k));
    }
    if (runs.size() > 2) x += runs[runs.size() - 2];
    runs.push_back(x);
  }
  std::vector<uint32_t> out;
  out.reserve(runs.size());
  int64_t total = 0;
  for (int64_t r : runs) {
    if (r < 0 || r > int64_t{height} * width) {
      throw Error("COCO mask " + std::string(source) + ": a run of " + std::to_string(r) +
                  " pixels in a " + std::to_string(height) + "x" + std::to_string(width) + " mask");
    }
    total += r;
    out.push_back(static_cast<uint32_t>(r));
  }
  if (total != int64_t{height} * width) {
    throw Error("COCO mask " + std::string(source) + ": its runs cover " + std::to_string(total) +
                " pixels, not the " + std::to_string(int64_t{height} * width) + " of a " +
                std::to_string(height) + "x" + std::to_string(width) + " mask");
  }
  return out;
}

CocoAnnotations CocoAnnotations::Read(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error("COCO annotations " + path + ": is a folder, not an annotation file");
  }
  simdjson::padded_string json;
  errno = 0;
  if (simdjson::padded_string::load(path).get(json)) {
    const int error = errno;
    throw Error("COCO annotations " + path + ": cannot be read" +
                (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
  }
  return Parse(json, path);
}

CocoAnnotations CocoAnnotations::Parse(std::string_view json, std::string_view source) {
  const Context ctx(source);
  simdjson::dom::parser parser;
  element doc;
  if (const simdjson::error_code error = parser.parse(json.data(), json.size()).get(doc)) {
    ctx.Fail("its text", std::string("not JSON (") + simdjson::error_message(error) + ")");
  }
  object top;
  if (doc.get(top)) ctx.Fail("the top level", "is not a JSON object");

  CocoAnnotations out;
  const array images = Array(Member(top, "images", "the top level", ctx), "\"images\"", "it", ctx);
  std::unordered_map<int64_t, uint32_t> image_of_id;
  out.images_.reserve(images.size());
  size_t i = 0;
  for (element entry : images) {
    const std::string where = "image " + std::to_string(i++);
    const object im = Object(entry, where, ctx);
    CocoImage image;
    image.id = Integer(Member(im, "id", where, ctx), "id", where, ctx);
    const std::string_view name = String(Member(im, "file_name", where, ctx), "file_name", where, ctx);
    if (Has(im, "height")) image.height = Size(Member(im, "height", where, ctx), "height", where, ctx);
    if (Has(im, "width")) image.width = Size(Member(im, "width", where, ctx), "width", where, ctx);
    if (!image_of_id.emplace(image.id, static_cast<uint32_t>(out.images_.size())).second) {
      ctx.Fail(where, "repeats image id " + std::to_string(image.id));
    }
    out.names_.append(name);
    out.name_ends_.push_back(out.names_.size());
    out.images_.push_back(image);
  }

  // Objects grouped by image, each image's in the file's order: counted
  // first, then placed.
  if (Has(top, "annotations")) {
    const array annotations =
        Array(Member(top, "annotations", "the top level", ctx), "\"annotations\"", "it", ctx);
    std::vector<uint32_t> owner;
    owner.reserve(annotations.size());
    size_t a = 0;
    for (element entry : annotations) {
      const std::string where = "annotation " + std::to_string(a++);
      const object an = Object(entry, where, ctx);
      const int64_t image_id = Integer(Member(an, "image_id", where, ctx), "image_id", where, ctx);
      auto it = image_of_id.find(image_id);
      if (it == image_of_id.end()) {
        ctx.Fail(where, "names image id " + std::to_string(image_id) + ", which \"images\" lacks");
      }
      owner.push_back(it->second);
      ++out.images_[it->second].num_objects;
    }
    uint32_t next = 0;
    for (CocoImage& image : out.images_) {
      image.first_object = next;
      next += image.num_objects;
    }
    std::vector<uint32_t> filled(out.images_.size(), 0);
    out.objects_.resize(owner.size());
    a = 0;
    for (element entry : annotations) {
      const std::string where = "annotation " + std::to_string(a);
      const uint32_t image_at = owner[a++];
      const object an = Object(entry, where, ctx);
      CocoObject& item = out.objects_[out.images_[image_at].first_object + filled[image_at]++];
      const array bbox = Array(Member(an, "bbox", where, ctx), where, "\"bbox\"", ctx);
      if (bbox.size() != 4) ctx.Fail(where, "\"bbox\" is not 4 numbers");
      size_t k = 0;
      for (element c : bbox) item.box[k++] = static_cast<float>(Number(c, "bbox", where, ctx));
      item.category = Integer(Member(an, "category_id", where, ctx), "category_id", where, ctx);
      item.crowd = Has(an, "iscrowd") &&
                     Integer(Member(an, "iscrowd", where, ctx), "iscrowd", where, ctx) != 0;
      item.area = Has(an, "area")
                      ? static_cast<float>(Number(Member(an, "area", where, ctx), "area", where, ctx))
                      : item.box[2] * item.box[3];
      if (Has(an, "keypoints")) {
        const array points = Array(Member(an, "keypoints", where, ctx), where, "\"keypoints\"", ctx);
        if (points.size() % 3 != 0 || points.size() / 3 > kMaxKeypoints) {
          ctx.Fail(where, "\"keypoints\" is not a list of at most " +
                              std::to_string(kMaxKeypoints) + " x, y, visibility triples");
        }
        item.first_keypoint = static_cast<uint32_t>(out.keypoint_values_.size() / 3);
        item.keypoint_count = static_cast<uint32_t>(points.size() / 3);
        for (element c : points) {
          out.keypoint_values_.push_back(static_cast<float>(Number(c, "keypoints", where, ctx)));
        }
      }
      if (!Has(an, "segmentation")) continue;
      const element seg = Member(an, "segmentation", where, ctx);
      if (seg.type() == element_type::ARRAY) {
        item.segmentation = CocoSegmentation::kPolygons;
        item.first = static_cast<uint32_t>(out.polygon_ends_.size());
        for (element polygon_entry : Array(seg, where, "\"segmentation\"", ctx)) {
          array polygon;
          if (polygon_entry.get(polygon) || polygon.size() % 2 != 0) {
            ctx.Fail(where, "a polygon of \"segmentation\" is not a list of x, y pairs");
          }
          for (element c : polygon) out.coordinates_.push_back(Number(c, "segmentation", where, ctx));
          out.polygon_ends_.push_back(out.coordinates_.size());
        }
        item.count = static_cast<uint32_t>(out.polygon_ends_.size()) - item.first;
      } else if (seg.type() == element_type::OBJECT) {
        const object mask = Object(seg, where, ctx);
        const array size = Array(Member(mask, "size", where, ctx), where, "the mask's \"size\"", ctx);
        if (size.size() != 2) ctx.Fail(where, "the mask's \"size\" is not [h, w]");
        CocoRle rle;
        rle.height = Size(size.at(0).value_unsafe(), "size", where, ctx);
        rle.width = Size(size.at(1).value_unsafe(), "size", where, ctx);
        const element counts = Member(mask, "counts", where, ctx);
        if (counts.type() == element_type::STRING) {
          rle.counts = DecodeCocoRleString(String(counts, "counts", where, ctx), rle.height,
                                           rle.width, std::string(source) + " " + where);
        } else if (counts.type() == element_type::ARRAY) {
          int64_t total = 0;
          for (element c : Array(counts, where, "the mask's \"counts\"", ctx)) {
            const int64_t n = Integer(c, "counts", where, ctx);
            if (n < 0 || n > int64_t{rle.height} * rle.width) {
              ctx.Fail(where, "the mask has a run of " + std::to_string(n) + " pixels");
            }
            total += n;
            rle.counts.push_back(static_cast<uint32_t>(n));
          }
          if (total != int64_t{rle.height} * rle.width) {
            ctx.Fail(where, "the mask's runs cover " + std::to_string(total) + " pixels, not " +
                                std::to_string(int64_t{rle.height} * rle.width));
          }
        } else {
          ctx.Fail(where, "the mask's \"counts\" is neither a list nor a string");
        }
        item.segmentation = CocoSegmentation::kRle;
        item.first = static_cast<uint32_t>(out.rles_.size());
        item.count = 1;
        out.rles_.push_back(std::move(rle));
      } else {
        ctx.Fail(where, "\"segmentation\" is neither polygons nor a mask");
      }
    }
  }

  if (Has(top, "categories")) {
    size_t c = 0;
    for (element entry :
         Array(Member(top, "categories", "the top level", ctx), "\"categories\"", "it", ctx)) {
      const std::string where = "category " + std::to_string(c++);
      const object cat = Object(entry, where, ctx);
      const int64_t id = Integer(Member(cat, "id", where, ctx), "id", where, ctx);
      out.categories_.emplace_back(id, std::string(String(Member(cat, "name", where, ctx), "name",
                                                          where, ctx)));
    }
  }
  return out;
}

std::string_view CocoAnnotations::file_name(int64_t i) const {
  const size_t k = static_cast<size_t>(i);
  const size_t begin = k == 0 ? 0 : name_ends_[k - 1];
  return std::string_view(names_).substr(begin, name_ends_[k] - begin);
}

std::span<const CocoObject> CocoAnnotations::objects(int64_t image) const {
  const CocoImage& im = images_[static_cast<size_t>(image)];
  return std::span<const CocoObject>(objects_).subspan(im.first_object, im.num_objects);
}

std::span<const double> CocoAnnotations::polygon(uint32_t k) const {
  const size_t begin = k == 0 ? 0 : polygon_ends_[k - 1];
  return std::span<const double>(coordinates_).subspan(begin, polygon_ends_[k] - begin);
}

}  // namespace feedline::vision
