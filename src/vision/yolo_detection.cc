#include "feedline/vision/yolo_detection.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "feedline/error.h"
#include "src/vision/detection_targets.h"
#include "src/vision/mosaic_sample.h"

namespace feedline::vision {
namespace {

namespace fs = std::filesystem;

// Scratch buffers of Get (Pipeline::Run uses its own).
constexpr int kBytesSlot = 0;
constexpr int kLabelsSlot = 1;
constexpr int kCanvasSlot = 2;  // a mosaic's tiles
static_assert(kCanvasSlot < SampleContext::kDatasetScratchSlots, "scratch slots overlap");

// How far past [0, 1] a normalized coordinate may be (exporters round).
constexpr double kSlack = 1e-3;

bool IsImageName(const fs::path& path) {
  std::string e = path.extension().string();
  if (!e.empty()) e.erase(0, 1);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e == "jpg" || e == "jpeg" || e == "png" || e == "webp";
}

// One object of a label line, in the image's pixels, and its polygon or
// keypoints.
struct LabelObject {
  ImageObject object;
  std::vector<double> polygon;  // x, y pairs in pixels; empty for a box
  std::vector<float> keypoints;  // x, y, visibility in pixels; (0, 0, 0) unlabelled
};

// The most keypoints a pose line may have (COCO's people have 17,
// whole-body sets 133).
constexpr int kMaxKeypoints = 4096;

// The label lines' layout: boxes and polygons, or pose lines of `keypoints`
// points of `dims` numbers each.
struct LabelLayout {
  int keypoints = 0;
  int dims = 3;
};

// `v` as a label file would write it (1.5, 1e+12), for messages.
std::string Number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

[[noreturn]] void BadLabel(const std::string& file, int line, const std::string& why,
                           int64_t index) {
  throw SampleError(FailureKind::kDecode, file, "line " + std::to_string(line) + ": " + why,
                    index);
}

// The objects of a label file's text, for an image of `width` x `height`.
std::vector<LabelObject> ParseLabels(std::string_view text, const std::string& file, int width,
                                     int height, int64_t index, LabelLayout layout) {
  const size_t pose_numbers = 5 + static_cast<size_t>(layout.keypoints) * layout.dims;
  std::vector<LabelObject> objects;
  std::vector<double> values;
  int line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    values.clear();
    size_t at = 0;
    while (true) {
      while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
      if (at >= line.size()) break;
      double v = 0;
      if (line[at] == '+') ++at;  // "+0.5", as numpy and Ultralytics read it
      const auto [next, error] = std::from_chars(line.data() + at, line.data() + line.size(), v);
      // A number ends at a space or the line's end ("0.5.5" is no number).
      const bool separated =
          next == line.data() + line.size() || std::isspace(static_cast<unsigned char>(*next));
      if (error != std::errc() || !std::isfinite(v) || !separated) {
        std::string quoted = "'";
        quoted.append(line);
        quoted += "' is not a list of numbers";
        BadLabel(file, line_number, quoted, index);
      }
      values.push_back(v);
      at = static_cast<size_t>(next - line.data());
    }
    if (values.empty()) continue;  // a blank line
    if (layout.keypoints > 0 && values.size() != pose_numbers) {
      BadLabel(file, line_number,
               "has " + std::to_string(values.size()) + " numbers: a pose line is 'class cx cy "
               "w h' and " + std::to_string(layout.keypoints) + " points of " +
                   std::to_string(layout.dims) + " numbers (" + std::to_string(pose_numbers) +
                   ")",
               index);
    }
    if (layout.keypoints == 0 && values.size() != 5 &&
        (values.size() < 7 || values.size() % 2 == 0)) {
      BadLabel(file, line_number,
               "has " + std::to_string(values.size()) +
                   " numbers: an object is 'class cx cy w h' or a class and 3 or more x y points",
               index);
    }
    if (values[0] < 0 || values[0] != std::trunc(values[0]) || values[0] > 1e9) {
      BadLabel(file, line_number, "class " + Number(values[0]) + " is not a whole number >= 0", index);
    }
    // A pose line's points: unlabelled at negative coordinates (2
    // numbers) or visibility 0 (3), outside the image otherwise allowed.
    const size_t checked = layout.keypoints > 0 ? 5 : values.size();
    for (size_t k = 1; k < checked; ++k) {
      if (values[k] < -kSlack || values[k] > 1 + kSlack) {
        BadLabel(file, line_number,
                 "coordinate " + Number(values[k]) + " is outside [0, 1] (normalized)",
                 index);
      }
    }
    LabelObject o;
    o.object.category = static_cast<int64_t>(values[0]);
    for (size_t k = 5; layout.keypoints > 0 && k < values.size();
         k += static_cast<size_t>(layout.dims)) {
      const double x = values[k], y = values[k + 1];
      double visibility = x < 0 || y < 0 ? 0 : 1;
      if (layout.dims == 3) {
        visibility = values[k + 2];
        if (visibility != 0 && visibility != 1 && visibility != 2) {
          BadLabel(file, line_number, "keypoint visibility " + Number(visibility) +
                                          " is not 0, 1 or 2", index);
        }
      }
      const bool labelled = visibility != 0;
      o.keypoints.push_back(labelled ? static_cast<float>(x * width) : 0.0f);
      o.keypoints.push_back(labelled ? static_cast<float>(y * height) : 0.0f);
      o.keypoints.push_back(static_cast<float>(visibility));
    }
    double x0, y0, x1, y1;
    if (values.size() == 5 || layout.keypoints > 0) {
      x0 = (values[1] - values[3] / 2) * width;
      x1 = (values[1] + values[3] / 2) * width;
      y0 = (values[2] - values[4] / 2) * height;
      y1 = (values[2] + values[4] / 2) * height;
    } else {
      x0 = y0 = INFINITY;
      x1 = y1 = -INFINITY;
      for (size_t k = 1; k + 1 < values.size(); k += 2) {
        const double x = values[k] * width, y = values[k + 1] * height;
        o.polygon.push_back(x);
        o.polygon.push_back(y);
        x0 = std::min(x0, x);
        x1 = std::max(x1, x);
        y0 = std::min(y0, y);
        y1 = std::max(y1, y);
      }
    }
    auto clamp = [](double v, int limit) {
      return static_cast<float>(std::clamp(v, 0.0, static_cast<double>(limit)));
    };
    o.object.box = {clamp(x0, width), clamp(y0, height), clamp(x1, width), clamp(y1, height)};
    o.object.area = (o.object.box[2] - o.object.box[0]) * (o.object.box[3] - o.object.box[1]);
    objects.push_back(std::move(o));
  }
  return objects;
}

LabelLayout Layout(const YoloDetectionOptions& options) {
  return LabelLayout{options.keypoints, options.keypoint_dims};
}

// The text of `label_file` (in a scratch buffer of ctx), empty when there
// is none: a background image.
std::string_view ReadLabelText(const std::string& label_file, std::vector<uint8_t>& text) {
  text.clear();
  std::error_code ec;
  if (fs::exists(label_file, ec)) {
    ReadOptions read;
    read.max_bytes = int64_t{64} << 20;
    ReadFile(label_file.c_str(), text, read);
  }
  return std::string_view(reinterpret_cast<const char*>(text.data()), text.size());
}

// The same into a scratch buffer of ctx, timed as the sample's read.
std::string_view ReadLabelText(const std::string& label_file, SampleContext& ctx) {
  auto timer = ctx.Time(Stage::kRead);
  return ReadLabelText(label_file, ctx.scratch(kLabelsSlot));
}

}  // namespace

std::string YoloLabelPath(const std::string& image_path) {
  const size_t part = image_path.rfind("/images/");
  if (part == std::string::npos) return {};
  std::string out = image_path;
  out.replace(part, 8, "/labels/");
  const size_t slash = out.rfind('/');
  const size_t dot = out.rfind('.');
  if (dot != std::string::npos && dot > slash) out.erase(dot);
  return out + ".txt";
}

YoloDetection::YoloDetection(const std::string& images_dir, Pipeline pipeline,
                             YoloDetectionOptions options)
    : images_dir_(images_dir), pipeline_(std::move(pipeline)), options_(options) {
  CheckDetectionOptions("YOLO dataset " + images_dir, pipeline_, options_.read,
                        options_.size_divisibility);
  if (options_.mosaic) {
    const std::string name = "YOLO dataset " + images_dir;
    CheckMosaicOptions(*options_.mosaic, name);
    CheckMosaicPipeline(pipeline_, *options_.mosaic, name);
    mosaic_cache_ = std::make_shared<MosaicImageCache>(options_.mosaic->cache_bytes);
  }
  if (options_.keypoints < 0 || options_.keypoints > kMaxKeypoints) {
    throw Error("YOLO dataset " + images_dir + ": keypoints must be from 0 to " +
                std::to_string(kMaxKeypoints) + ", got " + std::to_string(options_.keypoints));
  }
  if (options_.keypoint_dims != 2 && options_.keypoint_dims != 3) {
    throw Error("YOLO dataset " + images_dir + ": keypoint_dims must be 2 (x y) or 3 (x y "
                "visibility), got " + std::to_string(options_.keypoint_dims));
  }
  if (options_.keypoints == 0 && !options_.keypoint_flip.empty()) {
    throw Error("YOLO dataset " + images_dir + ": keypoint_flip given without keypoints");
  }
  CheckKeypointFlip(options_.keypoint_flip, options_.keypoints, "YOLO dataset " + images_dir);
  options_.read.image = true;
  while (images_dir_.size() > 1 && images_dir_.back() == '/') images_dir_.pop_back();
  absolute_dir_ = fs::absolute(images_dir_).lexically_normal().string();
  if (absolute_dir_.empty() || absolute_dir_.back() != '/') absolute_dir_ += '/';
  const std::string& absolute = absolute_dir_;
  if (absolute.find("/images/") == std::string::npos) {
    throw Error("YOLO dataset " + images_dir_ +
                ": its path has no 'images' folder, so where its labels are is unknown "
                "(the YOLO layout: .../images/... beside .../labels/...)");
  }
  std::error_code ec;
  // Where the labels are: a missing folder is a wrong path far more often
  // than a dataset of background images only (Ultralytics stops there too).
  const fs::path labels = fs::path(YoloLabelPath(absolute + "x.jpg")).parent_path();
  if (!fs::is_directory(labels, ec)) {
    throw Error("YOLO dataset " + images_dir_ + ": its labels folder " + labels.string() +
                " is missing (the YOLO layout: .../images/... beside .../labels/...)");
  }
  if (!fs::is_directory(images_dir_, ec)) {
    throw Error("YOLO dataset " + images_dir_ + ": not a folder" +
                (ec ? std::string(" (") + ec.message() + ")" : std::string()));
  }
  std::vector<std::string> paths;
  fs::recursive_directory_iterator it(images_dir_, fs::directory_options::follow_directory_symlink,
                                      ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (IsImageName(it->path()) && !it->is_directory()) {
      paths.push_back(it->path().lexically_relative(images_dir_).string());
    }
  }
  if (ec) throw Error("YOLO dataset " + images_dir_ + ": cannot be listed: " + ec.message());
  if (paths.empty()) {
    throw Error("YOLO dataset " + images_dir_ + ": no image files (.jpg, .jpeg, .png, .webp)");
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) files_.Add(p, 0);
}

std::string YoloDetection::Source(int64_t index) const {
  CheckIndex(index, size());
  return images_dir_ + "/" + std::string(files_.path(index));
}

std::string YoloDetection::LabelFile(int64_t index) const {
  CheckIndex(index, size());
  return YoloLabelPath(absolute_dir_ + std::string(files_.path(index)));
}

std::vector<PadMultiple> YoloDetection::PadMultiples() const {
  return DetectionImagePadding(pipeline_, options_.size_divisibility);
}

std::vector<std::string> YoloDetection::PaddedFields() const {
  return DetectionObjectFields(options_.masks, options_.keypoints > 0);
}

DetectionRecord YoloDetection::Record(int64_t index, int height, int width) const {
  const std::string label_file = LabelFile(index);
  std::vector<uint8_t> text;
  const std::string_view view = ReadLabelText(label_file, text);
  DetectionRecord record;
  record.image_id = index;
  record.image_height = height;
  record.image_width = width;
  for (const LabelObject& o : ParseLabels(view, label_file, width, height, index, Layout(options_))) {
    DetectionObject object{o.object.box, o.object.category, o.object.area, false};
    if (!o.polygon.empty()) {
      object.segmentation = CocoSegmentation::kPolygons;
      object.first = record.AddPolygon(o.polygon);
      object.count = 1;
    }
    record.objects.push_back(object);
    const std::array<float, 4>& b = o.object.box;
    if (b[2] - b[0] > 1 && b[3] - b[1] > 1) record.has_usable_box = true;
  }
  return record;
}

void YoloDetection::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  if (options_.mosaic) return GetMosaic(index, out, ctx);
  const std::string image = Source(index);
  std::vector<uint8_t>& bytes = ctx.scratch(kBytesSlot);
  {
    auto timer = ctx.Time(Stage::kRead);
    ReadFile(image.c_str(), bytes, options_.read);
  }
  const std::string label_file = LabelFile(index);
  const std::string_view label_text = ReadLabelText(label_file, ctx);
  // A RandomIoUCrop chooses from the boxes before the image's size is
  // known: read as fractions of a 1 x 1 image.
  std::vector<std::array<float, 4>> corners;
  if (pipeline_.ChoosesFromBoxes()) {
    for (const LabelObject& o : ParseLabels(label_text, label_file, 1, 1, index, Layout(options_))) {
      corners.push_back(o.object.box);
    }
  }
  PipelinePlan plan;
  pipeline_.Run(bytes, image, out, "image", ctx, {}, &plan,
                PlanBoxes{corners, /*normalized=*/true});

  auto timer = ctx.Time(Stage::kTransform);
  const std::vector<LabelObject> labelled =
      ParseLabels(label_text, label_file, plan.image_width, plan.image_height, index,
                  Layout(options_));
  std::vector<ImageObject> objects;
  std::vector<const LabelObject*> sources;
  for (size_t i = 0; i < labelled.size(); ++i) {
    const LabelObject& o = labelled[i];
    if (!(o.object.box[2] > o.object.box[0] && o.object.box[3] > o.object.box[1])) continue;
    objects.push_back(o.object);
    objects.back().plan_box = static_cast<int32_t>(i);  // corners lists every label line
    sources.push_back(&o);
  }
  std::optional<KeypointTargets> keypoints;
  if (options_.keypoints > 0) {
    keypoints = KeypointTargets{options_.keypoints, options_.keypoint_flip,
                                [&](size_t i) { return std::span<const float>(sources[i]->keypoints); }};
  }
  WriteDetectionTargets(
      plan, objects, options_.masks,
      [&](size_t i, const PlanGeometry& geometry, uint8_t* mask) {
        if (!sources[i]->polygon.empty()) {
          geometry.FillPolygon(sources[i]->polygon, mask);
        } else {
          FillBox(objects[i].box, geometry, mask);  // a box line: its box
        }
      },
      out, MaskPlacement::kOutput, keypoints ? &*keypoints : nullptr);
  out.SetScalar<int64_t>("image_id", index);
}

void YoloDetection::GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const {
  MosaicImages images;
  images.read = MosaicImages::FilesOf(*this, options_.read, ctx);
  // Each image's label lines as objects() parsed them, for masks and
  // keypoints.
  std::unordered_map<int64_t, std::vector<LabelObject>> parsed;
  images.objects = [&](int64_t image, int height, int width) {
    const std::string label_file = LabelFile(image);
    const std::string_view text = ReadLabelText(label_file, ctx);
    std::vector<LabelObject>& labelled = parsed[image];
    labelled = ParseLabels(text, label_file, width, height, image, Layout(options_));
    std::vector<ImageObject> objects;
    for (const LabelObject& o : labelled) objects.push_back(o.object);
    return objects;
  };
  if (options_.keypoints > 0) {
    images.keypoint_count = options_.keypoints;
    images.keypoint_flip = options_.keypoint_flip;
    images.keypoints = [&](int64_t image, size_t object) {
      return std::span<const float>(parsed.at(image)[object].keypoints);
    };
  }
  if (options_.masks) {
    images.draw_mask = [&](int64_t image, size_t object, const MosaicImages::MaskTarget& to) {
      const LabelObject& o = parsed.at(image)[object];
      if (!o.polygon.empty()) {
        to.geometry.FillPolygon(o.polygon, to.mask);
      } else {
        FillBox(to.box, to.geometry, to.mask);  // a box line: its box
      }
    };
  }
  WriteMosaicSample(pipeline_, *options_.mosaic, index, size(), images, *mosaic_cache_,
                    ctx.scratch(kBytesSlot), ctx.scratch(kCanvasSlot), out, ctx);
  out.SetScalar<int64_t>("image_id", index);
}

}  // namespace feedline::vision
