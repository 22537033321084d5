// SampleContext: the per-sample seed, generator, scratch buffers and stage
// times a dataset's Get() receives.
#include "feedline/sample_context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "feedline/error.h"
#include "feedline/rng.h"
#include "src/core/sample_context_access.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

TEST(SampleContext, HoldsWhatItDescribes) {
  SampleContext ctx(/*seed=*/7, /*epoch=*/2, /*index=*/41, /*worker_id=*/3);
  EXPECT_EQ(ctx.seed(), 7u);
  EXPECT_EQ(ctx.epoch(), 2);
  EXPECT_EQ(ctx.index(), 41);
  EXPECT_EQ(ctx.worker_id(), 3);
  EXPECT_EQ(SampleContext(1, 0, 0).worker_id(), -1);
}

TEST(SampleContext, DrawsTheSamplesOwnStream) {
  // The same (seed, epoch, index) as an Rng of its own: the draws depend on
  // the sample, not on the worker that loads it.
  SampleContext on_worker_0(7, 2, 41, 0);
  SampleContext on_worker_5(7, 2, 41, 5);
  Rng reference(7, 2, 41);
  for (int i = 0; i < 4; ++i) {
    const uint64_t expected = reference.NextU64();
    EXPECT_EQ(on_worker_0.rng().NextU64(), expected);
    EXPECT_EQ(on_worker_5.rng().NextU64(), expected);
  }
  SampleContext next_epoch(7, 3, 41);
  SampleContext next_index(7, 2, 42);
  Rng first(7, 2, 41);
  const uint64_t draw = first.NextU64();
  EXPECT_NE(next_epoch.rng().NextU64(), draw);
  EXPECT_NE(next_index.rng().NextU64(), draw);
}

TEST(SampleContext, ResetStartsTheNewSamplesStream) {
  SampleContext ctx(7, 0, 0);
  ctx.rng().NextU64();
  internal::SampleContextAccess::Reset(ctx, 1, 9);
  EXPECT_EQ(ctx.epoch(), 1);
  EXPECT_EQ(ctx.index(), 9);
  Rng reference(7, 1, 9);
  EXPECT_EQ(ctx.rng().NextU64(), reference.NextU64());
}

TEST(SampleContext, ScratchSlotsAreDistinctAndKeptAcrossSamples) {
  SampleContext ctx(1, 0, 0);
  ctx.scratch(0).assign(100, 1);
  ctx.scratch(SampleContext::kScratchSlots - 1).assign(3, 2);
  internal::SampleContextAccess::Reset(ctx, 0, 1);
  EXPECT_EQ(ctx.scratch(0).size(), 100u);
  EXPECT_EQ(ctx.scratch(SampleContext::kScratchSlots - 1).size(), 3u);
  EXPECT_NE(&ctx.scratch(0), &ctx.scratch(1));
}

TEST(SampleContext, RefusesAScratchSlotOutOfRangeNamingTheRange) {
  SampleContext ctx(1, 0, 0);
  EXPECT_THROW(ctx.scratch(-1), Error);
  try {
    ctx.scratch(SampleContext::kScratchSlots);
    FAIL() << "slot kScratchSlots is out of range";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("scratch slot must be in [0, 8), got 8"));
  }
}

TEST(SampleContext, StageTimesAddUpUntilDrained) {
  SampleContext ctx(1, 0, 0);
  ctx.AddStageTime(Stage::kDecode, 100);
  ctx.AddStageTime(Stage::kDecode, 20);
  ctx.AddStageTime(Stage::kRead, 5);
  EXPECT_EQ(ctx.stage_ns(Stage::kDecode), 120);
  const auto drained = internal::SampleContextAccess::DrainStageTimes(ctx);
  EXPECT_EQ(drained[static_cast<int>(Stage::kDecode)], 120);
  EXPECT_EQ(drained[static_cast<int>(Stage::kRead)], 5);
  EXPECT_EQ(drained[static_cast<int>(Stage::kTransform)], 0);
  EXPECT_EQ(ctx.stage_ns(Stage::kDecode), 0);
  EXPECT_EQ(ctx.stage_ns(Stage::kRead), 0);
}

TEST(SampleContext, TimerAddsItsScopeToItsStage) {
  SampleContext ctx(1, 0, 0);
  {
    auto timer = ctx.Time(Stage::kTransform);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_GE(ctx.stage_ns(Stage::kTransform), 2'000'000);
  EXPECT_EQ(ctx.stage_ns(Stage::kCollate), 0);
}

TEST(StageName, NamesEveryStage) {
  EXPECT_STREQ(StageName(Stage::kRead), "read");
  EXPECT_STREQ(StageName(Stage::kDecode), "decode");
  EXPECT_STREQ(StageName(Stage::kTransform), "transform");
  EXPECT_STREQ(StageName(Stage::kCollate), "collate");
}

}  // namespace
}  // namespace feedline
