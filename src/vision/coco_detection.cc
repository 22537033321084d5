#include "feedline/vision/coco_detection.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>

#include "feedline/error.h"
#include "feedline/vision/annotation_index.h"
#include "src/vision/detection_targets.h"
#include "src/vision/mosaic_sample.h"

namespace feedline::vision {
namespace {

// Scratch buffers of Get (Pipeline::Run uses its own).
constexpr int kBytesSlot = 0;
constexpr int kPathSlot = 1;
constexpr int kCanvasSlot = 2;  // a mosaic's tiles
static_assert(kCanvasSlot < SampleContext::kDatasetScratchSlots, "scratch slots overlap");

// The references' test for an image worth training on.
bool HasUsableBox(std::span<const CocoObject> objects) {
  return std::any_of(objects.begin(), objects.end(),
                     [](const CocoObject& o) { return o.box[2] > 1 && o.box[3] > 1; });
}

}  // namespace

CocoDetection::CocoDetection(std::string root, const std::string& annotation_file,
                             Pipeline pipeline, CocoDetectionOptions options)
    : CocoDetection(std::move(root),
                    std::make_shared<const CocoAnnotations>(
                        ReadCocoAnnotations(annotation_file, options.index_dir)),
                    std::move(pipeline), options) {
  annotation_file_ = annotation_file;
}

CocoDetection::CocoDetection(std::string root, std::shared_ptr<const CocoAnnotations> annotations,
                             Pipeline pipeline, CocoDetectionOptions options)
    : root_(std::move(root)),
      annotations_(std::move(annotations)),
      pipeline_(std::move(pipeline)),
      options_(options) {
  CheckDetectionOptions("COCO dataset", pipeline_, options_.read, options_.size_divisibility);
  if (options_.mosaic) {
    CheckMosaicOptions(*options_.mosaic, "COCO dataset");
    CheckMosaicPipeline(pipeline_, *options_.mosaic, "COCO dataset");
    if (options_.masks && options_.source_masks) {
      throw Error("COCO dataset: masks at the source's size (masks=\"source\") with mosaic are "
                  "not supported: a mosaic's masks are drawn at its output");
    }
    mosaic_cache_ = std::make_shared<MosaicImageCache>(options_.mosaic->cache_bytes);
  }
  if (options_.keypoints) CheckKeypoints();
  options_.read.image = true;
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  images_.reserve(static_cast<size_t>(annotations_->num_images()));
  for (int64_t i = 0; i < annotations_->num_images(); ++i) {
    if (options_.skip_empty && !HasUsableBox(annotations_->objects(i))) continue;
    images_.push_back(i);
  }
}

void CocoDetection::CheckKeypoints() {
  uint32_t most = 0;
  for (int64_t i = 0; i < annotations_->num_images(); ++i) {
    for (const CocoObject& o : annotations_->objects(i)) most = std::max(most, o.keypoint_count);
  }
  if (most == 0) {
    throw Error("COCO dataset: keypoints asked for, but no annotation lists \"keypoints\"");
  }
  keypoint_count_ = static_cast<int>(most);
  CheckKeypointFlip(options_.keypoint_flip, keypoint_count_, "COCO dataset");
}

int64_t CocoDetection::image_index(int64_t index) const {
  CheckIndex(index, size());
  return images_[static_cast<size_t>(index)];
}

std::vector<PadMultiple> CocoDetection::PadMultiples() const {
  return DetectionImagePadding(pipeline_, options_.size_divisibility);
}

std::vector<std::string> CocoDetection::PaddedFields() const {
  return DetectionObjectFields(options_.masks, options_.keypoints);
}

std::string CocoDetection::Source(int64_t index) const {
  const std::string_view file = annotations_->file_name(image_index(index));
  if (root_.empty() || (!file.empty() && file.front() == '/')) return std::string(file);
  return root_ + "/" + std::string(file);
}

DetectionRecord CocoDetection::Record(int64_t index, int height, int width) const {
  // COCO's boxes are kept as the file gives them (Get clamps them); the
  // image's size only stands in for one the file does not list.
  const int64_t image = image_index(index);
  const CocoImage& listed = annotations_->image(image);
  DetectionRecord record;
  record.image_id = listed.id;
  record.image_height = listed.height > 0 && listed.width > 0 ? listed.height : height;
  record.image_width = listed.height > 0 && listed.width > 0 ? listed.width : width;
  const std::span<const CocoObject> all = annotations_->objects(image);
  record.has_usable_box = HasUsableBox(all);
  for (const CocoObject& o : all) {
    // Corners computed as Get computes them, so that a pack's are the same floats.
    DetectionObject object{{o.box[0], o.box[1], o.box[0] + o.box[2], o.box[1] + o.box[3]},
                           o.category, o.area, o.crowd, o.segmentation};
    if (o.segmentation == CocoSegmentation::kPolygons) {
      object.first = static_cast<uint32_t>(record.polygon_ends.size());
      object.count = o.count;
      for (uint32_t k = 0; k < o.count; ++k) record.AddPolygon(annotations_->polygon(o.first + k));
    } else if (o.segmentation == CocoSegmentation::kRle) {
      object.first = static_cast<uint32_t>(record.masks.size());
      object.count = 1;
      record.masks.push_back(annotations_->rle(o.first));
    }
    record.objects.push_back(object);
  }
  return record;
}

void CocoDetection::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  if (options_.mosaic) return GetMosaic(index, out, ctx);
  const int64_t image = image_index(index);
  std::vector<uint8_t>& path = ctx.scratch(kPathSlot);
  const std::string_view file = annotations_->file_name(image);
  path.clear();
  if (!root_.empty() && !(!file.empty() && file.front() == '/')) {
    path.insert(path.end(), root_.begin(), root_.end());
    path.push_back('/');
  }
  path.insert(path.end(), file.begin(), file.end());
  path.push_back('\0');
  const char* name = reinterpret_cast<const char*>(path.data());
  std::vector<uint8_t>& bytes = ctx.scratch(kBytesSlot);
  {
    auto timer = ctx.Time(Stage::kRead);
    ReadFile(name, bytes, options_.read);
  }
  // The objects as the references convert them: corners clamped to the
  // image once it is read (ClampToImage), kept with a width and a height.
  const std::span<const CocoObject> all = annotations_->objects(image);
  std::vector<ImageObject> objects;
  std::vector<const CocoObject*> sources;
  std::vector<std::array<float, 4>> corners;
  objects.reserve(all.size());
  sources.reserve(all.size());
  for (const CocoObject& o : all) {
    if (o.crowd && !options_.keep_crowd) continue;
    objects.push_back(ImageObject{{o.box[0], o.box[1], o.box[0] + o.box[2], o.box[1] + o.box[3]},
                                  o.category, o.area, o.crowd,
                                  static_cast<int32_t>(objects.size())});
    sources.push_back(&o);
  }
  if (pipeline_.ChoosesFromBoxes()) {
    for (const ImageObject& o : objects) corners.push_back(o.box);
  }
  PipelinePlan plan;
  pipeline_.Run(bytes, name, out, "image", ctx, {}, &plan, PlanBoxes{corners});

  auto timer = ctx.Time(Stage::kTransform);
  const std::vector<size_t> kept = ClampToImage(plan, objects);
  std::optional<KeypointTargets> keypoints;
  if (options_.keypoints) {
    keypoints = KeypointTargets{keypoint_count_, options_.keypoint_flip, [&](size_t i) {
                                  return annotations_->keypoints(*sources[kept[i]]);
                                }};
  }
  WriteDetectionTargets(
      plan, objects, options_.masks,
      [&](size_t i, const PlanGeometry& geometry, uint8_t* mask) {
        const CocoObject& o = *sources[kept[i]];
        if (o.segmentation == CocoSegmentation::kPolygons) {
          for (uint32_t k = 0; k < o.count; ++k) {
            geometry.FillPolygon(annotations_->polygon(o.first + k), mask);
          }
        } else if (o.segmentation == CocoSegmentation::kRle) {
          CheckMaskSize(annotations_->rle(o.first), plan, name, index);
          geometry.FillRle(annotations_->rle(o.first), mask);
        } else {
          FillBox(objects[i].box, geometry, mask);  // no segmentation: its box
        }
      },
      out, options_.source_masks ? MaskPlacement::kSourceMirrored : MaskPlacement::kOutput,
      keypoints ? &*keypoints : nullptr);
  out.SetScalar<int64_t>("image_id", annotations_->image(image).id);
}

void CocoDetection::GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const {
  MosaicImages images;
  images.read = MosaicImages::FilesOf(*this, options_.read, ctx);
  // The objects as Get converts them (crowds dropped unless kept, corners
  // clamped to the image); those left without area are dropped there.
  // Each image's annotations in the order objects() listed them, for masks
  // and keypoints.
  std::unordered_map<int64_t, std::vector<const CocoObject*>> listed;
  images.objects = [&](int64_t sample, int height, int width) {
    std::vector<ImageObject> objects;
    std::vector<const CocoObject*>& sources = listed[sample];
    sources.clear();
    for (const CocoObject& o : annotations_->objects(image_index(sample))) {
      if (o.crowd && !options_.keep_crowd) continue;
      const float w = static_cast<float>(width), h = static_cast<float>(height);
      objects.push_back(ImageObject{{std::clamp(o.box[0], 0.0f, w), std::clamp(o.box[1], 0.0f, h),
                                     std::clamp(o.box[0] + o.box[2], 0.0f, w),
                                     std::clamp(o.box[1] + o.box[3], 0.0f, h)},
                                    o.category, o.area, o.crowd});
      sources.push_back(&o);
    }
    return objects;
  };
  if (options_.keypoints) {
    images.keypoint_count = keypoint_count_;
    images.keypoint_flip = options_.keypoint_flip;
    images.keypoints = [&](int64_t sample, size_t object) {
      return annotations_->keypoints(*listed.at(sample)[object]);
    };
  }
  if (options_.masks) {
    images.draw_mask = [&](int64_t sample, size_t object, const MosaicImages::MaskTarget& to) {
      const CocoObject& o = *listed.at(sample)[object];
      if (o.segmentation == CocoSegmentation::kPolygons) {
        for (uint32_t k = 0; k < o.count; ++k) {
          to.geometry.FillPolygon(annotations_->polygon(o.first + k), to.mask);
        }
      } else if (o.segmentation == CocoSegmentation::kRle) {
        CheckMaskSize(annotations_->rle(o.first), to.plan, Source(sample), sample);
        to.geometry.FillRle(annotations_->rle(o.first), to.mask);
      } else {
        FillBox(to.box, to.geometry, to.mask);  // no segmentation: its box
      }
    };
  }
  WriteMosaicSample(pipeline_, *options_.mosaic, index, size(), images, *mosaic_cache_,
                    ctx.scratch(kBytesSlot), ctx.scratch(kCanvasSlot), out, ctx);
  out.SetScalar<int64_t>("image_id", annotations_->image(image_index(index)).id);
}

}  // namespace feedline::vision
