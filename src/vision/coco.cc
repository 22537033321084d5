#include "feedline/vision/coco.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

using Value = rapidjson::Value;

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

const Value& Member(const Value& object, const char* name, const std::string& where,
                    const Context& ctx) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd()) ctx.Fail(where, std::string("has no \"") + name + "\"");
  return it->value;
}

int64_t Integer(const Value& v, const char* name, const std::string& where, const Context& ctx) {
  if (v.IsInt64()) return v.GetInt64();
  // Some converters write ids and sizes as 12.0.
  if (v.IsDouble() && v.GetDouble() == static_cast<double>(static_cast<int64_t>(v.GetDouble()))) {
    return static_cast<int64_t>(v.GetDouble());
  }
  ctx.Fail(where, std::string("\"") + name + "\" is not an integer");
}

float Number(const Value& v, const char* name, const std::string& where, const Context& ctx) {
  if (!v.IsNumber()) ctx.Fail(where, std::string("\"") + name + "\" is not a number");
  return static_cast<float>(v.GetDouble());
}

int Size(const Value& v, const char* name, const std::string& where, const Context& ctx) {
  const int64_t n = Integer(v, name, where, ctx);
  if (n < 0 || n > (1 << 30)) ctx.Fail(where, std::string("\"") + name + "\" is out of range");
  return static_cast<int>(n);
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
      if (p >= counts.size() || k > 12) {
        throw Error("COCO mask " + std::string(source) + ": its compressed counts end inside a count");
      }
      const int c = static_cast<unsigned char>(counts[p]) - 48;
      if (c < 0 || c > 63) {
        throw Error("COCO mask " + std::string(source) + ": its compressed counts hold a character '" +
                    std::string(1, counts[p]) + "' outside the format");
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("COCO annotations " + path + ": cannot be opened");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw Error("COCO annotations " + path + ": cannot be read");
  return Parse(bytes.str(), path);
}

CocoAnnotations CocoAnnotations::Parse(std::string_view json, std::string_view source) {
  const Context ctx(source);
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    ctx.Fail("byte " + std::to_string(doc.GetErrorOffset()),
             std::string("not JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()));
  }
  if (!doc.IsObject()) ctx.Fail("the top level", "is not a JSON object");

  CocoAnnotations out;
  const Value& images = Member(doc, "images", "the top level", ctx);
  if (!images.IsArray()) ctx.Fail("\"images\"", "is not a list");
  std::unordered_map<int64_t, uint32_t> image_of_id;
  out.images_.reserve(images.Size());
  for (rapidjson::SizeType i = 0; i < images.Size(); ++i) {
    const Value& im = images[i];
    const std::string where = "image " + std::to_string(i);
    if (!im.IsObject()) ctx.Fail(where, "is not an object");
    CocoImage image;
    image.id = Integer(Member(im, "id", where, ctx), "id", where, ctx);
    const Value& name = Member(im, "file_name", where, ctx);
    if (!name.IsString()) ctx.Fail(where, "\"file_name\" is not a string");
    if (im.HasMember("height")) image.height = Size(im["height"], "height", where, ctx);
    if (im.HasMember("width")) image.width = Size(im["width"], "width", where, ctx);
    if (!image_of_id.emplace(image.id, static_cast<uint32_t>(out.images_.size())).second) {
      ctx.Fail(where, "repeats image id " + std::to_string(image.id));
    }
    out.names_.append(name.GetString(), name.GetStringLength());
    out.name_ends_.push_back(out.names_.size());
    out.images_.push_back(image);
  }

  // Objects grouped by image, each image's in the file's order: counted
  // first, then placed.
  std::vector<uint32_t> owner;
  if (doc.HasMember("annotations")) {
    const Value& annotations = doc["annotations"];
    if (!annotations.IsArray()) ctx.Fail("\"annotations\"", "is not a list");
    owner.reserve(annotations.Size());
    for (rapidjson::SizeType a = 0; a < annotations.Size(); ++a) {
      const Value& an = annotations[a];
      const std::string where = "annotation " + std::to_string(a);
      if (!an.IsObject()) ctx.Fail(where, "is not an object");
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
    for (rapidjson::SizeType a = 0; a < annotations.Size(); ++a) {
      const Value& an = annotations[a];
      const std::string where = "annotation " + std::to_string(a);
      const CocoImage& image = out.images_[owner[a]];
      CocoObject& object = out.objects_[image.first_object + filled[owner[a]]++];
      const Value& bbox = Member(an, "bbox", where, ctx);
      if (!bbox.IsArray() || bbox.Size() != 4) ctx.Fail(where, "\"bbox\" is not 4 numbers");
      for (rapidjson::SizeType k = 0; k < 4; ++k) object.box[k] = Number(bbox[k], "bbox", where, ctx);
      object.category = Integer(Member(an, "category_id", where, ctx), "category_id", where, ctx);
      object.crowd = an.HasMember("iscrowd") && Integer(an["iscrowd"], "iscrowd", where, ctx) != 0;
      object.area = an.HasMember("area") ? Number(an["area"], "area", where, ctx)
                                         : object.box[2] * object.box[3];
      if (!an.HasMember("segmentation")) continue;
      const Value& seg = an["segmentation"];
      if (seg.IsArray()) {
        object.segmentation = CocoSegmentation::kPolygons;
        object.first = static_cast<uint32_t>(out.polygon_ends_.size());
        for (const Value& polygon : seg.GetArray()) {
          if (!polygon.IsArray() || polygon.Size() % 2 != 0) {
            ctx.Fail(where, "a polygon of \"segmentation\" is not a list of x, y pairs");
          }
          for (const Value& c : polygon.GetArray()) {
            out.coordinates_.push_back(Number(c, "segmentation", where, ctx));
          }
          out.polygon_ends_.push_back(out.coordinates_.size());
        }
        object.count = static_cast<uint32_t>(out.polygon_ends_.size()) - object.first;
      } else if (seg.IsObject()) {
        const Value& size = Member(seg, "size", where, ctx);
        if (!size.IsArray() || size.Size() != 2) ctx.Fail(where, "the mask's \"size\" is not [h, w]");
        CocoRle rle;
        rle.height = Size(size[0], "size", where, ctx);
        rle.width = Size(size[1], "size", where, ctx);
        const Value& counts = Member(seg, "counts", where, ctx);
        if (counts.IsString()) {
          rle.counts = DecodeCocoRleString(std::string_view(counts.GetString(), counts.GetStringLength()),
                                           rle.height, rle.width,
                                           std::string(source) + " " + where);
        } else if (counts.IsArray()) {
          int64_t total = 0;
          for (const Value& c : counts.GetArray()) {
            const int64_t n = Integer(c, "counts", where, ctx);
            if (n < 0) ctx.Fail(where, "the mask has a negative run");
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
        object.segmentation = CocoSegmentation::kRle;
        object.first = static_cast<uint32_t>(out.rles_.size());
        object.count = 1;
        out.rles_.push_back(std::move(rle));
      } else {
        ctx.Fail(where, "\"segmentation\" is neither polygons nor a mask");
      }
    }
  }

  if (doc.HasMember("categories")) {
    const Value& categories = doc["categories"];
    if (!categories.IsArray()) ctx.Fail("\"categories\"", "is not a list");
    for (rapidjson::SizeType c = 0; c < categories.Size(); ++c) {
      const std::string where = "category " + std::to_string(c);
      const Value& cat = categories[c];
      if (!cat.IsObject()) ctx.Fail(where, "is not an object");
      const int64_t id = Integer(Member(cat, "id", where, ctx), "id", where, ctx);
      const Value& name = Member(cat, "name", where, ctx);
      if (!name.IsString()) ctx.Fail(where, "\"name\" is not a string");
      out.categories_.emplace_back(id, std::string(name.GetString(), name.GetStringLength()));
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

std::span<const float> CocoAnnotations::polygon(uint32_t k) const {
  const size_t begin = k == 0 ? 0 : polygon_ends_[k - 1];
  return std::span<const float>(coordinates_).subspan(begin, polygon_ends_[k] - begin);
}

}  // namespace feedline::vision
