#include "src/vision/detection_targets.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "feedline/error.h"

namespace feedline::vision {

void CheckDetectionOptions(const std::string& dataset, const Pipeline& pipeline,
                           const ReadOptions& read, int64_t size_divisibility) {
  if (read.max_bytes <= 0) {
    throw Error(dataset + ": max_file_bytes must be > 0, got " + std::to_string(read.max_bytes));
  }
  if (size_divisibility < 1 || size_divisibility > 65536) {
    throw Error(dataset + ": size_divisibility must be from 1 to 65536, got " +
                std::to_string(size_divisibility));
  }
  CheckDetectionPipeline(pipeline, dataset);
}

std::vector<PadMultiple> DetectionImagePadding(const Pipeline& pipeline,
                                               int64_t size_divisibility) {
  if (size_divisibility <= 1) return {};
  const int64_t s = size_divisibility;
  return {PadMultiple{"image", pipeline.chw() ? std::vector<int64_t>{1, s, s}
                                              : std::vector<int64_t>{s, s, 1}}};
}

std::vector<std::string> DetectionObjectFields(bool masks, bool keypoints) {
  std::vector<std::string> fields = {"boxes", "labels", "area", "iscrowd"};
  if (masks) fields.push_back("masks");
  if (keypoints) fields.push_back("keypoints");
  return fields;
}

void CheckDetectionPipeline(const Pipeline& pipeline, const std::string& dataset) {
  for (const Transform& t : pipeline.transforms()) {
    if (t.kind == Transform::Kind::kTrivialAugmentWide || t.kind == Transform::Kind::kRandAugment ||
        t.kind == Transform::Kind::kAutoAugment) {
      throw Error(dataset + ": " + t.ToString() +
                  " shears, translates and rotates the pixels where the boxes and masks cannot "
                  "follow; a detection pipeline takes flips, resizes, crops, RandomZoomOut, "
                  "RandomIoUCrop and photometric steps (ColorJitter, "
                  "RandomPhotometricDistort)");
    }
  }
}

std::vector<size_t> ClampToImage(const PipelinePlan& plan, std::vector<ImageObject>& objects) {
  const float width = static_cast<float>(plan.image_width);
  const float height = static_cast<float>(plan.image_height);
  std::vector<size_t> kept;
  kept.reserve(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    std::array<float, 4>& box = objects[i].box;
    box = {std::clamp(box[0], 0.0f, width), std::clamp(box[1], 0.0f, height),
           std::clamp(box[2], 0.0f, width), std::clamp(box[3], 0.0f, height)};
    if (!(box[2] > box[0] && box[3] > box[1])) continue;
    objects[kept.size()] = objects[i];
    kept.push_back(i);
  }
  objects.resize(kept.size());
  return kept;
}

void CheckMaskSize(const CocoRle& rle, const PipelinePlan& plan, std::string_view source,
                   int64_t index) {
  if (rle.height == plan.image_height && rle.width == plan.image_width) return;
  throw SampleError(FailureKind::kDecode, std::string(source),
                    "an object's mask is " + std::to_string(rle.height) + "x" +
                        std::to_string(rle.width) + " (height x width), the image " +
                        std::to_string(plan.image_height) + "x" + std::to_string(plan.image_width),
                    index);
}

void FillBox(const std::array<float, 4>& box, const PlanGeometry& geometry, uint8_t* mask) {
  const double corners[8] = {box[0], box[1], box[2], box[1], box[2], box[3], box[0], box[3]};
  geometry.FillPolygon(corners, mask);
}

namespace {

// Clears the pixels of `mask` outside `image` (x0, y0, x1, y1 in output
// pixels): where a zoom-out's canvas or a crop's padding shows no image, no
// object shows either, though its polygon may reach there.
void ClearOutside(const std::array<int, 4>& image, int oh, int ow, uint8_t* mask) {
  for (int y = 0; y < oh; ++y) {
    uint8_t* row = mask + static_cast<size_t>(y) * ow;
    if (y < image[1] || y >= image[3]) {
      std::memset(row, 0, static_cast<size_t>(ow));
      continue;
    }
    std::memset(row, 0, static_cast<size_t>(image[0]));
    std::memset(row + image[2], 0, static_cast<size_t>(ow - image[2]));
  }
}

// Draws masks of `objects` (indices) through `geometry` into "masks".
void WriteMasks(const PlanGeometry& geometry, const std::vector<size_t>& objects,
                const std::array<float, 4>& source, const DrawMask& draw, Sample& out) {
  const int oh = geometry.out_height(), ow = geometry.out_width();
  const int64_t n = static_cast<int64_t>(objects.size());
  Tensor planes = out.Allocate("masks", DType::kU8, Shape{n, oh, ow});
  const size_t plane = static_cast<size_t>(oh) * ow;
  uint8_t* m = planes.data<uint8_t>();
  if (n > 0) std::memset(m, 0, plane * static_cast<size_t>(n));  // no buffer when empty
  // The image's own pixels in the output (all of it unless padded).
  const std::array<float, 4> shown = geometry.MapBox(source);
  const std::array<int, 4> image = {
      std::clamp(static_cast<int>(std::lround(shown[0])), 0, ow),
      std::clamp(static_cast<int>(std::lround(shown[1])), 0, oh),
      std::clamp(static_cast<int>(std::lround(shown[2])), 0, ow),
      std::clamp(static_cast<int>(std::lround(shown[3])), 0, oh)};
  const bool padded = image[0] > 0 || image[1] > 0 || image[2] < ow || image[3] < oh;
  for (size_t k = 0; k < objects.size(); ++k) {
    draw(objects[k], geometry, m + plane * k);
    if (padded) ClearOutside(image, oh, ow, m + plane * k);
  }
}

// Writes "keypoints" of `objects` (indices) through `geometry`.
void WriteKeypoints(const PlanGeometry& geometry, bool mirrored,
                    const std::vector<size_t>& objects, const KeypointTargets& keypoints,
                    Sample& out) {
  const int64_t n = static_cast<int64_t>(objects.size());
  const int count = keypoints.count;
  Tensor field = out.Allocate("keypoints", DType::kF32, Shape{n, count, 3});
  if (n == 0 || count == 0) return;  // no buffer
  const MapKeypoint map = [&](double x, double y) {
    return std::optional<std::array<double, 2>>(geometry.MapPoint(x, y));
  };
  for (size_t i = 0; i < objects.size(); ++i) {
    WriteKeypointRow(keypoints.source(objects[i]), count, keypoints.flip, mirrored, map,
                     field.data<float>() + i * static_cast<size_t>(count) * 3);
  }
}

// The plan of the source image as it is, mirrored as `plan` mirrors it.
PipelinePlan SourceMirrored(const PipelinePlan& plan) {
  PipelinePlan source;
  source.width = plan.image_width;
  source.height = plan.image_height;
  source.out_width = plan.image_width;
  source.out_height = plan.image_height;
  source.image_width = plan.image_width;
  source.image_height = plan.image_height;
  source.flip = plan.flip;
  return source;
}

}  // namespace

void WriteObjectFields(std::span<const ImageObject> objects, Sample& out) {
  const int64_t n = static_cast<int64_t>(objects.size());
  Tensor boxes = out.Allocate("boxes", DType::kF32, Shape{n, 4});
  Tensor labels = out.Allocate("labels", DType::kI64, Shape{n});
  Tensor area = out.Allocate("area", DType::kF32, Shape{n});
  Tensor crowd = out.Allocate("iscrowd", DType::kI64, Shape{n});
  for (int64_t k = 0; k < n; ++k) {
    const ImageObject& o = objects[static_cast<size_t>(k)];
    std::memcpy(boxes.data<float>() + 4 * k, o.box.data(), 4 * sizeof(float));
    labels.data<int64_t>()[k] = o.category;
    area.data<float>()[k] = o.area;
    crowd.data<int64_t>()[k] = o.crowd ? 1 : 0;
  }
}

void WriteKeypointRow(std::span<const float> given, int count, const std::vector<int32_t>& flip,
                      bool mirrored, const MapKeypoint& map, float* row) {
  for (int k = 0; k < count; ++k) {
    const size_t from = static_cast<size_t>(mirrored && !flip.empty() ? flip[k] : k);
    float* point = row + static_cast<size_t>(k) * 3;
    point[0] = point[1] = point[2] = 0;
    if (3 * from + 2 >= given.size() || given[3 * from + 2] == 0) continue;
    const std::optional<std::array<double, 2>> at = map(given[3 * from], given[3 * from + 1]);
    if (!at) continue;
    point[0] = static_cast<float>((*at)[0]);
    point[1] = static_cast<float>((*at)[1]);
    point[2] = given[3 * from + 2];
  }
}

void CheckKeypointFlip(const std::vector<int32_t>& flip, int count, const std::string& dataset) {
  if (flip.empty()) return;
  std::vector<bool> seen(static_cast<size_t>(std::max(count, 0)), false);
  bool permutation = flip.size() == seen.size();
  for (const int32_t k : flip) {
    permutation = permutation && k >= 0 && k < count && !seen[static_cast<size_t>(k)];
    if (permutation) seen[static_cast<size_t>(k)] = true;
  }
  if (!permutation) {
    throw Error(dataset + ": keypoint_flip must list each of the " + std::to_string(count) +
                " keypoints once (a permutation of 0.." + std::to_string(count - 1) + "), got " +
                std::to_string(flip.size()) + " entries");
  }
}

void WriteDetectionTargets(const PipelinePlan& plan, std::span<const ImageObject> objects,
                           bool masks, const DrawMask& draw, Sample& out,
                           MaskPlacement placement, const KeypointTargets* keypoints) {
  const PlanGeometry geometry(plan);
  const std::array<float, 4> source = {0, 0, static_cast<float>(plan.image_width),
                                       static_cast<float>(plan.image_height)};
  // The objects kept (by index), with their boxes in output pixels.
  std::vector<std::pair<size_t, std::array<float, 4>>> kept;
  kept.reserve(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    if (!plan.kept_boxes.empty()) {  // a RandomIoUCrop keeps what it chose from
      const int32_t k = objects[i].plan_box;
      if (k < 0 || static_cast<size_t>(k) >= plan.kept_boxes.size() || !plan.kept_boxes[k]) {
        continue;
      }
    }
    const std::array<float, 4> mapped = geometry.MapBox(objects[i].box);
    if (mapped[2] > mapped[0] && mapped[3] > mapped[1]) kept.emplace_back(i, mapped);
  }
  std::vector<ImageObject> mapped;
  mapped.reserve(kept.size());
  for (const auto& [i, box] : kept) {
    mapped.push_back(objects[i]);
    mapped.back().box = box;
  }
  WriteObjectFields(mapped, out);
  if (keypoints != nullptr) {
    std::vector<size_t> listed;
    for (const auto& entry : kept) listed.push_back(entry.first);
    WriteKeypoints(geometry, plan.flip, listed, *keypoints, out);
  }
  if (masks && placement == MaskPlacement::kOutput) {
    std::vector<size_t> drawn;
    for (const auto& entry : kept) drawn.push_back(entry.first);
    WriteMasks(geometry, drawn, source, draw, out);
  } else if (masks) {
    std::vector<size_t> all(objects.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    WriteMasks(PlanGeometry(SourceMirrored(plan)), all, source, draw, out);
    Tensor size = out.Allocate("masks_size", DType::kI64, Shape{2});
    size.data<int64_t>()[0] = plan.image_height;
    size.data<int64_t>()[1] = plan.image_width;
  }
  Tensor size = out.Allocate("image_size", DType::kI64, Shape{2});
  size.data<int64_t>()[0] = plan.out_height;
  size.data<int64_t>()[1] = plan.out_width;
}

}  // namespace feedline::vision
