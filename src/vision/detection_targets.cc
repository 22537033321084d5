#include "src/vision/detection_targets.h"

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

std::vector<std::string> DetectionObjectFields(bool masks) {
  std::vector<std::string> fields = {"boxes", "labels", "area", "iscrowd"};
  if (masks) fields.push_back("masks");
  return fields;
}

void CheckDetectionPipeline(const Pipeline& pipeline, const std::string& dataset) {
  for (const Transform& t : pipeline.transforms()) {
    if (t.kind == Transform::Kind::kTrivialAugmentWide || t.kind == Transform::Kind::kRandAugment ||
        t.kind == Transform::Kind::kAutoAugment) {
      throw Error(dataset + ": " + t.ToString() +
                  " shears, translates and rotates the pixels where the boxes and masks cannot "
                  "follow; a detection pipeline takes flips, resizes, crops and photometric "
                  "steps (ColorJitter)");
    }
  }
}

void FillBox(const std::array<float, 4>& box, const PlanGeometry& geometry, uint8_t* mask) {
  const double corners[8] = {box[0], box[1], box[2], box[1], box[2], box[3], box[0], box[3]};
  geometry.FillPolygon(corners, mask);
}

void WriteDetectionTargets(const PipelinePlan& plan, std::span<const ImageObject> objects,
                           bool masks, const DrawMask& draw, Sample& out) {
  const PlanGeometry geometry(plan);
  // The objects kept (by index), with their boxes in output pixels.
  std::vector<std::pair<size_t, std::array<float, 4>>> kept;
  kept.reserve(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    const std::array<float, 4> mapped = geometry.MapBox(objects[i].box);
    if (mapped[2] > mapped[0] && mapped[3] > mapped[1]) kept.emplace_back(i, mapped);
  }
  const int64_t n = static_cast<int64_t>(kept.size());
  Tensor boxes = out.Allocate("boxes", DType::kF32, Shape{n, 4});
  Tensor labels = out.Allocate("labels", DType::kI64, Shape{n});
  Tensor area = out.Allocate("area", DType::kF32, Shape{n});
  Tensor crowd = out.Allocate("iscrowd", DType::kI64, Shape{n});
  for (int64_t k = 0; k < n; ++k) {
    const auto& [i, box] = kept[static_cast<size_t>(k)];
    std::memcpy(boxes.data<float>() + 4 * k, box.data(), 4 * sizeof(float));
    labels.data<int64_t>()[k] = objects[i].category;
    area.data<float>()[k] = objects[i].area;
    crowd.data<int64_t>()[k] = objects[i].crowd ? 1 : 0;
  }
  if (masks) {
    const int oh = plan.out_height, ow = plan.out_width;
    Tensor planes = out.Allocate("masks", DType::kU8, Shape{n, oh, ow});
    const size_t plane = static_cast<size_t>(oh) * ow;
    uint8_t* m = planes.data<uint8_t>();
    if (n > 0) std::memset(m, 0, plane * static_cast<size_t>(n));  // no buffer when empty
    for (int64_t k = 0; k < n; ++k) {
      draw(kept[static_cast<size_t>(k)].first, geometry, m + plane * static_cast<size_t>(k));
    }
  }
  Tensor size = out.Allocate("image_size", DType::kI64, Shape{2});
  size.data<int64_t>()[0] = plan.out_height;
  size.data<int64_t>()[1] = plan.out_width;
}

}  // namespace feedline::vision
