#include "feedline/vision/voc.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pugixml.hpp>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string_view Trim(std::string_view s) {
  const auto space = IsSpace;
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

[[noreturn]] void Bad(std::string_view source, const std::string& why) {
  throw Error("VOC annotation " + std::string(source) + ": " + why);
}

// The text of `parent`'s child `name` (all of it: "1<!-- -->5" is "15"),
// trimmed; empty when it has none.
std::string ChildText(const pugi::xml_node& parent, const char* name) {
  std::string text;
  for (const pugi::xml_node part : parent.child(name).children()) {
    if (part.type() == pugi::node_pcdata || part.type() == pugi::node_cdata) text += part.value();
  }
  return std::string(Trim(text));
}

// A number as VOC files write them: "174", or "174.5" from converters.
double Number(const pugi::xml_node& parent, const char* name, std::string_view source,
              std::string_view object) {
  const std::string text = ChildText(parent, name);
  // "+5" as Python's float() reads it.
  const size_t sign = !text.empty() && text[0] == '+' ? 1 : 0;
  double v = 0;
  const auto [end, error] = std::from_chars(text.data() + sign, text.data() + text.size(), v);
  if (text.size() == sign || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(v)) {
    Bad(source, std::string(object) + ": <" + name + "> is '" + std::string(text) +
                    "', not a number");
  }
  // No image is a billion pixels across; such a number is a damaged file
  // (and would not fit the boxes' floats).
  if (std::fabs(v) > 1e9) {
    Bad(source, std::string(object) + ": <" + name + "> is " + std::string(text) +
                    ", beyond any image (more than 1e9)");
  }
  return v;
}

// A flag (<difficult>, <truncated>): absent, a number 0 ("0", "0.0") or
// "false" is false; a number not 0 or "true" is true; anything else is an
// error (a flag misread would drop or keep an object silently).
bool Flag(const pugi::xml_node& object, const char* name, std::string_view source,
          std::string_view what) {
  std::string text = ChildText(object, name);
  if (text.empty()) return false;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (text == "true") return true;
  if (text == "false") return false;
  double v = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    Bad(source, std::string(what) + ": <" + name + "> is '" + text +
                    "', not 0, 1, true or false");
  }
  return v != 0;
}

// A regular file's text. Opened without blocking, so that a FIFO in its
// place is refused rather than waited on.
std::string ReadText(const std::string& path, const char* what) {
  // A list or an annotation is kilobytes; more is not one (and is not
  // read into memory).
  constexpr int64_t kMaxBytes = int64_t{256} << 20;
  const auto fail = [&](const std::string& why) -> std::string {
    throw Error("VOC " + std::string(what) + " " + path + " cannot be read: " + why);
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxBytes) {
    const std::string why = S_ISDIR(st.st_mode)   ? "it is a folder"
                            : S_ISREG(st.st_mode) ? "it is larger than 256 MB"
                                                  : "it is not a regular file";
    ::close(fd);
    return fail(why);
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  int error = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done != text.size()) return fail(error != 0 ? std::strerror(error) : "it changed size");
  return text;
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
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (std::find(classes_.begin(), classes_.begin() + static_cast<std::ptrdiff_t>(i),
                  classes_[i]) != classes_.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw Error("VOC annotations: class '" + classes_[i] + "' is listed twice");
    }
  }
}

VocAnnotations VocAnnotations::Read(const std::string& root, const std::string& image_set,
                                    std::vector<std::string> classes) {
  VocAnnotations voc(std::move(classes));
  const std::string list = root + "/ImageSets/Main/" + image_set + ".txt";
  const std::string ids = ReadText(list, "image set");
  std::string_view rest = ids;
  while (!rest.empty()) {
    // Lines end with \n, \r\n or \r.
    const size_t end = rest.find_first_of("\r\n");
    std::string_view line = Trim(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    // "<id>" in Main/<set>.txt; "<id> <1|-1|0>" in the per-class lists: an
    // id ends at the first space.
    line = line.substr(0, std::find_if(line.begin(), line.end(), IsSpace) - line.begin());
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
  // One element at the top and no text after it, as XML has it (pugixml
  // reads fragments too and drops text at the top).
  int elements = 0;
  for (const pugi::xml_node top : document.children()) {
    if (top.type() == pugi::node_element) ++elements;
  }
  const size_t last = xml.rfind('>');
  if (last != std::string_view::npos && !Trim(xml.substr(last + 1)).empty()) {
    Bad(source, "not XML: text after the <annotation> element");
  }
  const pugi::xml_node annotation = document.child("annotation");
  if (!annotation) Bad(source, "no <annotation> element");
  if (elements != 1) Bad(source, "not XML: more than one element at the top");
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
    const std::string name = ChildText(object, "name");
    const auto it = std::find(classes_.begin(), classes_.end(), name);
    if (it == classes_.end()) {
      Bad(source, what + ": class '" + std::string(name) + "' is not one of the " +
                      std::to_string(classes_.size()) + " classes given");
    }
    o.label = it - classes_.begin();
    o.difficult = Flag(object, "difficult", source, what);
    o.truncated = Flag(object, "truncated", source, what);
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
