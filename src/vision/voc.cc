#include "feedline/vision/voc.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include <pugixml.hpp>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

[[noreturn]] void Bad(std::string_view source, const std::string& why) {
  throw Error("VOC annotation " + std::string(source) + ": " + why);
}

// The text of `parent`'s child `name`, trimmed; empty when it has none.
std::string_view ChildText(const pugi::xml_node& parent, const char* name) {
  return Trim(parent.child(name).child_value());
}

// A number as VOC files write them: "174", or "174.5" from converters.
double Number(const pugi::xml_node& parent, const char* name, std::string_view source,
              std::string_view object) {
  const std::string_view text = ChildText(parent, name);
  double v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(v)) {
    Bad(source, std::string(object) + ": <" + name + "> is '" + std::string(text) +
                    "', not a number");
  }
  return v;
}

// A flag (<difficult>, <truncated>): absent or "0" is false.
bool Flag(const pugi::xml_node& object, const char* name) {
  const std::string_view text = ChildText(object, name);
  return !text.empty() && text != "0";
}

std::string ReadText(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("VOC " + std::string(what) + " " + path + " cannot be read: no such file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("VOC " + std::string(what) + " " + path + " cannot be read");
  return text.str();
}

}  // namespace

const std::vector<std::string>& VocAnnotations::DefaultClasses() {
  static const std::vector<std::string> classes = {
      "aeroplane",   "bicycle", "bird",  "boat",      "bottle", "bus",         "car",
      "cat",         "chair",   "cow",   "diningtable", "dog",  "horse",       "motorbike",
      "person",      "pottedplant", "sheep", "sofa",  "train",  "tvmonitor"};
  return classes;
}

VocAnnotations::VocAnnotations(std::vector<std::string> classes) : classes_(std::move(classes)) {
  if (classes_.empty()) throw Error("VOC annotations: the list of classes is empty");
}

VocAnnotations VocAnnotations::Read(const std::string& root, const std::string& image_set,
                                    std::vector<std::string> classes) {
  VocAnnotations voc(std::move(classes));
  const std::string list = root + "/ImageSets/Main/" + image_set + ".txt";
  const std::string ids = ReadText(list, "image set");
  std::string_view rest = ids;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = Trim(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    // "<id>" in Main/<set>.txt; "<id> <1|-1|0>" in the per-class lists.
    line = line.substr(0, std::min(line.find(' '), line.find('\t')));
    if (line.empty()) continue;
    const std::string xml_path = root + "/Annotations/" + std::string(line) + ".xml";
    voc.Add(std::string(line), ReadText(xml_path, "annotation"), xml_path);
  }
  if (voc.num_images() == 0) throw Error("VOC image set " + list + " lists no image");
  return voc;
}

void VocAnnotations::Add(std::string id, std::string_view xml, std::string_view source) {
  pugi::xml_document document;
  const pugi::xml_parse_result parsed = document.load_buffer(xml.data(), xml.size());
  if (!parsed) {
    Bad(source, std::string("not XML: ") + parsed.description() + " at offset " +
                    std::to_string(parsed.offset));
  }
  const pugi::xml_node annotation = document.child("annotation");
  if (!annotation) Bad(source, "no <annotation> element");
  VocImage image;
  if (const pugi::xml_node size = annotation.child("size")) {
    const double width = Number(size, "width", source, "<size>");
    const double height = Number(size, "height", source, "<size>");
    if (width < 0 || height < 0 || width > (1 << 30) || height > (1 << 30)) {
      Bad(source, "<size> " + std::to_string(width) + "x" + std::to_string(height) +
                      " is not an image's size");
    }
    image.width = static_cast<int>(width);
    image.height = static_cast<int>(height);
  }
  image.first_object = static_cast<uint32_t>(objects_.size());
  int number = 0;
  for (const pugi::xml_node object : annotation.children("object")) {
    const std::string what = "object " + std::to_string(number++);
    VocObject o;
    const std::string_view name = ChildText(object, "name");
    const auto it = std::find(classes_.begin(), classes_.end(), name);
    if (it == classes_.end()) {
      Bad(source, what + ": class '" + std::string(name) + "' is not one of the " +
                      std::to_string(classes_.size()) + " classes given");
    }
    o.label = it - classes_.begin();
    o.difficult = Flag(object, "difficult");
    o.truncated = Flag(object, "truncated");
    const pugi::xml_node box = object.child("bndbox");
    if (!box) Bad(source, what + " ('" + std::string(name) + "') has no <bndbox>");
    const double xmin = Number(box, "xmin", source, what);
    const double ymin = Number(box, "ymin", source, what);
    const double xmax = Number(box, "xmax", source, what);
    const double ymax = Number(box, "ymax", source, what);
    if (xmin > xmax || ymin > ymax) {
      Bad(source, what + ": <bndbox> (" + std::to_string(xmin) + ", " + std::to_string(ymin) +
                      ", " + std::to_string(xmax) + ", " + std::to_string(ymax) +
                      ") has its minimum past its maximum");
    }
    // Pixels from 1, inclusive: the edges from 0 that cover them.
    o.box = {static_cast<float>(xmin - 1), static_cast<float>(ymin - 1),
             static_cast<float>(xmax), static_cast<float>(ymax)};
    objects_.push_back(o);
  }
  image.num_objects = static_cast<uint32_t>(objects_.size()) - image.first_object;
  images_.push_back(image);
  ids_.push_back(std::move(id));
}

std::span<const VocObject> VocAnnotations::objects(int64_t image) const {
  const VocImage& im = images_[static_cast<size_t>(image)];
  return std::span<const VocObject>(objects_).subspan(im.first_object, im.num_objects);
}

}  // namespace feedline::vision
