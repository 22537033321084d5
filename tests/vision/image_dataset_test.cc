#include "feedline/vision/image_dataset.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/synth/synth.h"
#include "src/core/sample_context_access.h"
#include "tests/vision/vision_testing.h"

namespace feedline::vision {
namespace {

TEST(ImageList, StoresPathsBackToBack) {
  ImageList list;
  list.Add("a/x.jpg", 3);
  list.Add("", 0);
  list.Add("bb/y.png", 1);
  ASSERT_EQ(list.size(), 3);
  EXPECT_EQ(list.path(0), "a/x.jpg");
  EXPECT_EQ(list.path(1), "");
  EXPECT_EQ(list.path(2), "bb/y.png");
  EXPECT_EQ(list.labels(), (std::vector<int64_t>{3, 0, 1}));
}

TEST(ImageDataset, RejectsLabelsOutsideTheClasses) {
  ImageList list;
  list.Add("a.jpg", 2);
  try {
    ImageDataset data("/r", list, {"a", "b"}, TrainPipeline());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 2 of 'a.jpg' is outside [0, 2)"), std::string::npos)
        << e.what();
  }
}

TEST(ImageDataset, VariableShapesDeclareOnlyTheLabel) {
  ImageList list;
  list.Add("a.jpg", 0);
  PipelineOptions options;
  options.dtype = DType::kU8;
  ImageDataset data("", list, {"a"}, Pipeline({Transform::Resize(64)}, options));
  const std::vector<FieldSpec> fixed = data.FixedFields();
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].name, "label");
  EXPECT_EQ(data.Source(0), "a.jpg");  // no root
}

TEST(ImageDataset, ReusesScratchBetweenSamples) {
  testing::TempDir dir;
  ImageList list;
  for (int i = 0; i < 3; ++i) {
    testing::WriteBytes(dir / (std::to_string(i) + ".jpg"), SynthesizeJpeg(120, 100, 90 + i));
    list.Add(std::to_string(i) + ".jpg", 0);
  }
  ImageDataset data(dir.path(), list, {"x"}, ValPipeline(56, 48));  // same sizes every time
  SampleContext ctx(0, 0, 0);
  Sample sample;
  data.Get(0, sample, ctx);
  data.Get(1, sample, ctx);  // warm up the largest buffers
  std::vector<const uint8_t*> buffers;
  for (int slot = 0; slot < SampleContext::kScratchSlots; ++slot)
    buffers.push_back(ctx.scratch(slot).data());
  for (int i = 0; i < 3; ++i) {
    sample.Clear();
    feedline::internal::SampleContextAccess::Reset(ctx, 0, i);
    data.Get(i % 2, sample, ctx);
  }
  for (int slot = 0; slot < SampleContext::kScratchSlots; ++slot) {
    EXPECT_EQ(ctx.scratch(slot).data(), buffers[static_cast<size_t>(slot)]) << "slot " << slot;
  }
}

}  // namespace
}  // namespace feedline::vision
