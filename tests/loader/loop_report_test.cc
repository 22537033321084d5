// Summarize, FormatVerdict and FormatReportLine on hand-made snapshots: the
// numbers and words follow from the counters alone, no clock involved.
#include "feedline/loop_report.h"

#include <gtest/gtest.h>

#include "feedline/sample_context.h"

namespace feedline {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;

// A window of `steps` steps of `step_ms` each and `wait_ms` of waiting in
// all, over `workers` workers each busy `busy_ms`.
StatsSnapshot Window(int64_t steps, int64_t step_ms, int64_t wait_ms, int workers,
                     int64_t busy_ms) {
  StatsSnapshot s;
  s.steps = steps;
  s.batches = steps;
  s.delivered_samples = steps * 32;
  s.step_ns = steps * step_ms * kNsPerMs;
  s.consumer_wait_ns = wait_ms * kNsPerMs;
  s.elapsed_ns = s.step_ns + s.consumer_wait_ns;
  for (int w = 0; w < workers; ++w) s.workers.push_back({busy_ms * kNsPerMs, 0});
  return s;
}

TEST(LoopReportTest, LoaderBoundWithBusyWorkersAndADominantStage) {
  // 100 steps of 10 ms, 700 ms of waiting: the loop waited 41% of 1.7 s.
  StatsSnapshot s = Window(100, 10, 700, 4, 1650);
  s.stage_ns[static_cast<size_t>(Stage::kDecode)] = 5478 * kNsPerMs;  // 83% of 6.6 s busy
  s.stage_ns[static_cast<size_t>(Stage::kRead)] = 500 * kNsPerMs;
  const LoopReport r = Summarize(s, {}, 4);
  EXPECT_EQ(r.steps, 100);
  EXPECT_DOUBLE_EQ(r.step_s, 0.010);
  EXPECT_DOUBLE_EQ(r.wait_s, 0.007);
  EXPECT_NEAR(r.wait_share, 700.0 / 1700, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 3200 / 1.7, 1e-9);
  EXPECT_NEAR(r.worker_busy, 6600.0 / (4 * 1700), 1e-12);
  EXPECT_EQ(r.top_stage, "decode");
  EXPECT_EQ(r.bound, LoopBound::kLoader);
  EXPECT_EQ(r.verdict,
            "loader-bound: the loop waited 41% of the time; decode is 83% of worker time; the 4 "
            "workers were busy 97% of the time: more workers (up to one per core) or cheaper "
            "samples would help");
}

TEST(LoopReportTest, LoaderBoundWithIdleWorkersSuggestsPrefetch) {
  const LoopReport r = Summarize(Window(10, 10, 100, 2, 40), {}, 2);  // busy 20%
  EXPECT_EQ(r.verdict,
            "loader-bound: the loop waited 50% of the time; the 2 workers were busy only 20% of "
            "the time: more workers will not help, a larger prefetch_factor may");
}

TEST(LoopReportTest, OneWorkerAndAStageTooSmallToName) {
  StatsSnapshot s = Window(10, 10, 300, 1, 390);  // busy 390 of 400 ms
  s.stage_ns[static_cast<size_t>(Stage::kCollate)] = 4 * kNsPerMs;  // 1% of worker time
  const LoopReport r = Summarize(s, {}, 1);
  EXPECT_EQ(r.top_stage, "collate");
  EXPECT_EQ(r.verdict,
            "loader-bound: the loop waited 75% of the time; the worker was busy 98% of the "
            "time: more workers (up to one per core) or cheaper samples would help");
}

TEST(LoopReportTest, LoaderBoundInTheTrainingThread) {
  const LoopReport r = Summarize(Window(10, 10, 300, 1, 300), {}, 0);
  EXPECT_EQ(r.worker_busy, -1);
  EXPECT_EQ(r.verdict,
            "loader-bound: the loop waited 75% of the time; samples load in the training thread "
            "(num_workers = 0): worker threads would load them while the step runs");
}

TEST(LoopReportTest, StepBound) {
  // 2% waiting; 4 workers busy 30% of the time: fewer would do.
  const LoopReport spare = Summarize(Window(100, 49, 100, 4, 1500), {}, 4);
  EXPECT_EQ(spare.bound, LoopBound::kStep);
  EXPECT_EQ(spare.verdict,
            "step-bound: the loop waited 2% of the time; the 4 workers were busy 30% of the "
            "time: fewer would keep up and leave CPU to the step");
  const LoopReport busy = Summarize(Window(100, 49, 100, 2, 4000), {}, 2);
  EXPECT_EQ(busy.verdict,
            "step-bound: the loop waited 2% of the time; nothing to change in the loader");
}

TEST(LoopReportTest, TheThresholdIsTenPercent) {
  EXPECT_EQ(Summarize(Window(10, 90, 100, 1, 0), {}, 1).bound, LoopBound::kStep);    // 10%
  EXPECT_EQ(Summarize(Window(10, 89, 110, 1, 0), {}, 1).bound, LoopBound::kLoader);  // 11%
}

TEST(LoopReportTest, TheFirstBatchIsStartUpAndLeftOutOfTheVerdict) {
  // 10 steps of 10 ms; of the 102 ms waited, 100 went to the first batch
  // (workers starting): the loop is step-bound, not loader-bound.
  StatsSnapshot s = Window(10, 10, 102, 2, 150);
  s.first_batch_ns = 100 * kNsPerMs;
  const LoopReport r = Summarize(s, {}, 2);
  EXPECT_DOUBLE_EQ(r.start_wait_s, 0.1);
  EXPECT_NEAR(r.wait_share, 2.0 / 102, 1e-12);
  EXPECT_NEAR(r.wait_s, 0.0002, 1e-12);
  EXPECT_EQ(r.bound, LoopBound::kStep);
  EXPECT_EQ(r.verdict,
            "step-bound: the loop waited 2% of the time (after the first batch, which took "
            "100.0 ms); nothing to change in the loader");
  // A window that starts later does not hold the first batch.
  StatsSnapshot later = s;
  later.steps += 10;
  later.batches += 10;
  later.step_ns += 100 * kNsPerMs;
  later.consumer_wait_ns += 50 * kNsPerMs;
  later.elapsed_ns += 150 * kNsPerMs;
  const LoopReport window = Summarize(later, s, 2);
  EXPECT_EQ(window.start_wait_s, 0);
  EXPECT_NEAR(window.wait_share, 50.0 / 150, 1e-12);
}

TEST(LoopReportTest, NothingMeasuredYet) {
  const LoopReport r = Summarize(StatsSnapshot{}, {}, 4);
  EXPECT_EQ(r.bound, LoopBound::kUnknown);
  EXPECT_EQ(r.verdict,
            "unknown: no training step measured yet (a step ends when the loop asks for the "
            "next batch)");
}

TEST(LoopReportTest, AWindowIsTheDifferenceOfTwoSnapshots) {
  // 50 step-bound steps, then 50 loader-bound ones: the window sees only those.
  const StatsSnapshot before = Window(50, 20, 0, 2, 100);
  StatsSnapshot after = before;
  const StatsSnapshot more = Window(50, 10, 1000, 2, 1400);
  after.steps += more.steps;
  after.batches += more.batches;
  after.delivered_samples += more.delivered_samples;
  after.step_ns += more.step_ns;
  after.consumer_wait_ns += more.consumer_wait_ns;
  after.elapsed_ns += more.elapsed_ns;
  for (size_t w = 0; w < 2; ++w) after.workers[w].busy_ns += more.workers[w].busy_ns;
  const LoopReport window = Summarize(after, before, 2);
  EXPECT_EQ(window.steps, 50);
  EXPECT_DOUBLE_EQ(window.step_s, 0.010);
  EXPECT_DOUBLE_EQ(window.wait_s, 0.020);
  EXPECT_NEAR(window.wait_share, 2.0 / 3, 1e-12);
  EXPECT_NEAR(window.worker_busy, 2800.0 / (2 * 1500), 1e-12);
  EXPECT_EQ(window.bound, LoopBound::kLoader);
  EXPECT_EQ(Summarize(before, {}, 2).bound, LoopBound::kStep);
}

TEST(LoopReportTest, TheLineReadsLikeTheProgressLine) {
  LoopReport r = Summarize(Window(100, 10, 700, 4, 1650), {}, 4);
  r.epoch = 2;
  r.batch = 200;
  r.batches_per_epoch = 500;
  EXPECT_EQ(FormatReportLine(r),
            "epoch 2: batch 200/500, 1882 samples/s, step 10.0 ms, data wait 7.0 ms (41%); "
            "loader-bound: the loop waited 41% of the time; the 4 workers were busy 97% of the "
            "time: more workers (up to one per core) or cheaper samples would help");
  r.end_of_epoch = true;
  r.batch = 500;
  r.batches_per_epoch = -1;
  EXPECT_EQ(FormatReportLine(r).rfind("epoch 2: batch 500 (end), 1882 samples/s, ", 0), 0u)
      << FormatReportLine(r);
}

}  // namespace
}  // namespace feedline
