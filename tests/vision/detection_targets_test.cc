#include "src/vision/detection_targets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A plan that shows a 20 x 10 image halved and mirrored.
PipelinePlan HalvedMirror() {
  PipelinePlan plan;
  plan.width = 20;
  plan.height = 10;
  plan.out_width = 10;
  plan.out_height = 5;
  plan.flip = true;
  plan.image_width = 20;
  plan.image_height = 10;
  return plan;
}

template <typename T>
std::vector<T> TargetValues(const Sample& s, const std::string& name) {
  const Tensor* t = s.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  return std::vector<T>(t->data<T>(), t->data<T>() + t->elements());
}

TEST(DetectionTargets, ObjectsFollowThePlanAndThoseLeftOutsideAreDropped) {
  const std::vector<ImageObject> objects = {
      {{0, 0, 4, 2}, 3, 8.0f, false},
      {{30, 0, 40, 5}, 5, 50.0f, true},  // outside the image: dropped
      {{10, 4, 20, 10}, 7, 60.0f, true}};
  std::vector<size_t> drawn;
  Sample s;
  WriteDetectionTargets(HalvedMirror(), objects, true,
                        [&](size_t i, const PlanGeometry& geometry, uint8_t* mask) {
                          drawn.push_back(i);
                          FillBox(objects[i].box, geometry, mask);
                        },
                        s);
  EXPECT_THAT(TargetValues<float>(s, "boxes"), ElementsAre(8, 0, 10, 1, 0, 2, 5, 5));
  EXPECT_THAT(TargetValues<int64_t>(s, "labels"), ElementsAre(3, 7));
  EXPECT_THAT(TargetValues<float>(s, "area"), ElementsAre(8, 60));
  EXPECT_THAT(TargetValues<int64_t>(s, "iscrowd"), ElementsAre(0, 1));
  EXPECT_THAT(TargetValues<int64_t>(s, "image_size"), ElementsAre(5, 10));
  EXPECT_THAT(drawn, ElementsAre(0, 2));  // each kept object's own mask
  ASSERT_EQ(s.Find("masks")->shape(), (Shape{2, 5, 10}));
  const std::vector<uint8_t> masks = TargetValues<uint8_t>(s, "masks");
  // Object 0's box in output pixels: columns 8-9 of row 0.
  for (int v = 0; v < 5; ++v) {
    for (int u = 0; u < 10; ++u) {
      EXPECT_EQ(masks[static_cast<size_t>(v * 10 + u)], (v == 0 && u >= 8) ? 1 : 0) << v << u;
    }
  }
  EXPECT_EQ(DetectionObjectFields(true).back(), "masks");
  EXPECT_EQ(DetectionObjectFields(false).size(), 4u);
}

TEST(DetectionTargets, NoObjectsGiveEmptyFieldsAndNoMasksWithoutAsking) {
  Sample s;
  WriteDetectionTargets(HalvedMirror(), {}, true, [](size_t, const PlanGeometry&, uint8_t*) {}, s);
  EXPECT_EQ(s.Find("boxes")->shape(), (Shape{0, 4}));
  EXPECT_EQ(s.Find("masks")->shape(), (Shape{0, 5, 10}));
  Sample plain;
  WriteDetectionTargets(HalvedMirror(), std::vector<ImageObject>{{{0, 0, 4, 2}, 1, 1, false}},
                        false, nullptr, plain);
  EXPECT_EQ(plain.Find("masks"), nullptr);
}

TEST(DetectionTargets, PipelinesThatMovePixelsOutsideThePlanAreRefused) {
  EXPECT_NO_THROW(CheckDetectionPipeline(
      Pipeline({Transform::RandomHorizontalFlip(), Transform::ColorJitter({0.8, 1.2})}),
      "d"));
  for (const Transform& t : {Transform::TrivialAugmentWide(), Transform::RandAugment(),
                             Transform::AutoAugment(AutoAugmentPolicy::kImageNet)}) {
    try {
      CheckDetectionPipeline(Pipeline({t}), "my dataset");
      FAIL() << t.ToString();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("my dataset: " + t.ToString()));
    }
  }
}

}  // namespace
}  // namespace feedline::vision
