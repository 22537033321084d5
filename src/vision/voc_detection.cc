#include "feedline/vision/voc_detection.h"

#include <algorithm>
#include <utility>

#include "feedline/error.h"
#include "src/vision/detection_targets.h"
#include "src/vision/mosaic_sample.h"

namespace feedline::vision {
namespace {

// Scratch buffers of Get (Pipeline::Run uses its own).
constexpr int kBytesSlot = 0;
constexpr int kCanvasSlot = 2;  // a mosaic's tiles
static_assert(kCanvasSlot < SampleContext::kDatasetScratchSlots, "scratch slots overlap");

std::vector<std::string> ClassesOrDefault(const std::vector<std::string>& classes) {
  return classes.empty() ? VocAnnotations::DefaultClasses() : classes;
}

}  // namespace

VocDetection::VocDetection(std::string root, const std::string& image_set, Pipeline pipeline,
                           VocDetectionOptions options)
    : root_(std::move(root)),
      image_set_(image_set),
      pipeline_(std::move(pipeline)),
      options_(std::move(options)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  CheckDetectionOptions("VOC dataset " + root_, pipeline_, options_.read,
                        options_.size_divisibility);
  options_.read.image = true;
  if (options_.mosaic) {
    const std::string name = "VOC dataset " + root_;
    CheckMosaicOptions(*options_.mosaic, name);
    CheckMosaicPipeline(pipeline_, *options_.mosaic, name);
    mosaic_cache_ = std::make_shared<MosaicImageCache>(options_.mosaic->cache_bytes);
  }
  annotations_ = std::make_shared<const VocAnnotations>(
      VocAnnotations::Read(root_, image_set_, ClassesOrDefault(options_.classes)));
}

std::string VocDetection::Source(int64_t index) const {
  CheckIndex(index, size());
  return root_ + "/JPEGImages/" + annotations_->id(index) + ".jpg";
}

std::vector<PadMultiple> VocDetection::PadMultiples() const {
  return DetectionImagePadding(pipeline_, options_.size_divisibility);
}

std::vector<std::string> VocDetection::PaddedFields() const {
  return DetectionObjectFields(/*masks=*/false);
}

DetectionRecord VocDetection::Record(int64_t index, int height, int width) const {
  CheckIndex(index, size());
  DetectionRecord record;
  record.image_id = index;
  const VocImage& listed = annotations_->image(index);
  record.image_height = listed.height > 0 && listed.width > 0 ? listed.height : height;
  record.image_width = listed.height > 0 && listed.width > 0 ? listed.width : width;
  const float w = static_cast<float>(width);
  const float h = static_cast<float>(height);
  for (const VocObject& o : annotations_->objects(index)) {
    // The area of the box clipped to the image, computed as Get computes it.
    const std::array<float, 4> clipped = {
        std::clamp(o.box[0], 0.0f, w), std::clamp(o.box[1], 0.0f, h),
        std::clamp(o.box[2], 0.0f, w), std::clamp(o.box[3], 0.0f, h)};
    const float area = (clipped[2] - clipped[0]) * (clipped[3] - clipped[1]);
    record.objects.push_back(DetectionObject{o.box, o.label, area, o.difficult});
    if (o.box[2] - o.box[0] > 1 && o.box[3] - o.box[1] > 1) record.has_usable_box = true;
  }
  return record;
}

void VocDetection::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  if (options_.mosaic) return GetMosaic(index, out, ctx);
  const std::string name = Source(index);
  std::vector<uint8_t>& bytes = ctx.scratch(kBytesSlot);
  {
    auto timer = ctx.Time(Stage::kRead);
    ReadFile(name.c_str(), bytes, options_.read);
  }
  const std::span<const VocObject> all = annotations_->objects(index);
  std::vector<std::array<float, 4>> corners;  // for a RandomIoUCrop
  if (pipeline_.ChoosesFromBoxes()) {
    for (const VocObject& o : all) {
      if (!o.difficult || options_.keep_difficult) corners.push_back(o.box);
    }
  }
  PipelinePlan plan;
  pipeline_.Run(bytes, name, out, "image", ctx, {}, &plan, PlanBoxes{corners});

  auto timer = ctx.Time(Stage::kTransform);
  std::vector<ImageObject> objects;
  objects.reserve(all.size());
  const float width = static_cast<float>(plan.image_width);
  const float height = static_cast<float>(plan.image_height);
  int32_t plan_box = 0;  // the index among the boxes planned with (corners)
  for (const VocObject& o : all) {
    if (o.difficult && !options_.keep_difficult) continue;
    const int32_t planned = plan_box++;
    const std::array<float, 4> box = {
        std::clamp(o.box[0], 0.0f, width), std::clamp(o.box[1], 0.0f, height),
        std::clamp(o.box[2], 0.0f, width), std::clamp(o.box[3], 0.0f, height)};
    if (!(box[2] > box[0] && box[3] > box[1])) continue;
    objects.push_back(
        ImageObject{box, o.label, (box[2] - box[0]) * (box[3] - box[1]), o.difficult, planned});
  }
  WriteDetectionTargets(plan, objects, /*masks=*/false, {}, out);
  out.SetScalar<int64_t>("image_id", index);
}

void VocDetection::GetMosaic(int64_t index, Sample& out, SampleContext& ctx) const {
  MosaicImages images;
  images.read = MosaicImages::FilesOf(*this, options_.read, ctx);
  // The objects as Get keeps them: difficult ones left out unless kept (as
  // iscrowd 1), corners clamped to the image; those left without area are
  // dropped there.
  images.objects = [&](int64_t sample, int height, int width) {
    std::vector<ImageObject> objects;
    const float w = static_cast<float>(width), h = static_cast<float>(height);
    for (const VocObject& o : annotations_->objects(sample)) {
      if (o.difficult && !options_.keep_difficult) continue;
      const std::array<float, 4> box = {
          std::clamp(o.box[0], 0.0f, w), std::clamp(o.box[1], 0.0f, h),
          std::clamp(o.box[2], 0.0f, w), std::clamp(o.box[3], 0.0f, h)};
      objects.push_back(
          ImageObject{box, o.label, (box[2] - box[0]) * (box[3] - box[1]), o.difficult});
    }
    return objects;
  };
  WriteMosaicSample(pipeline_, *options_.mosaic, index, size(), images, *mosaic_cache_,
                    ctx.scratch(kBytesSlot), ctx.scratch(kCanvasSlot), out, ctx);
  out.SetScalar<int64_t>("image_id", index);
}

}  // namespace feedline::vision
