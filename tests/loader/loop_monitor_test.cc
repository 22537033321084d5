// LoopMonitor with a scripted clock and scripted engine statistics (exact
// numbers), then through a real DataLoader (counts and the verdict's side,
// with margins far from the threshold).
#include "src/loader/loop_monitor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "test_datasets.h"
#include "testing/errors.h"

namespace feedline {
namespace {

constexpr int64_t kMs = 1'000'000;

// A loop driven by hand: the clock moves only when the test says.
struct ScriptedLoop {
  int64_t now = 0;
  StatsSnapshot engine;  // what the engine would report
  std::vector<LoopReport> reports;
  internal::LoopMonitor monitor{[this] { return now; },
                                [this] {
                                  StatsSnapshot s = engine;
                                  s.elapsed_ns = now;
                                  return s;
                                },
                                [] { return int64_t{10}; }, /*num_workers=*/2};

  // One Next() that waits `wait_ms` and delivers batch `index` of `epoch`,
  // then a training step of `step_ms`.
  void Batch(int64_t epoch, int64_t index, int64_t wait_ms, int64_t step_ms) {
    monitor.BeforeCall();
    now += wait_ms * kMs;
    engine.consumer_wait_ns += wait_ms * kMs;
    ++engine.batches;
    monitor.AfterBatch(/*rows=*/8, epoch, index);
    now += step_ms * kMs;
  }
  void End() {
    monitor.BeforeCall();
    monitor.AfterEnd();
  }
};

TEST(LoopMonitorTest, AStepIsTheTimeFromADeliveryToTheNextCall) {
  ScriptedLoop loop;
  loop.Batch(0, 0, /*wait_ms=*/5, /*step_ms=*/20);
  EXPECT_EQ(loop.monitor.Stats().steps, 0);  // the step on batch 0 is still running
  loop.Batch(0, 1, 1, 30);
  StatsSnapshot s = loop.monitor.Stats();
  EXPECT_EQ(s.steps, 1);
  EXPECT_EQ(s.step_ns, 20 * kMs);
  loop.End();
  s = loop.monitor.Stats();
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.step_ns, 50 * kMs);
  EXPECT_EQ(s.delivered_samples, 16);
  // Time between epochs (evaluation, say) is no step.
  loop.now += 1000 * kMs;
  loop.Batch(1, 0, 1, 10);
  EXPECT_EQ(loop.monitor.Stats().step_ns, 50 * kMs);
}

TEST(LoopMonitorTest, ReportsEveryNStepsAndAtTheEndOfEachEpoch) {
  ScriptedLoop loop;
  loop.monitor.SetReport(3, [&](const LoopReport& r) { loop.reports.push_back(r); });
  for (int64_t b = 0; b < 3; ++b) loop.Batch(0, b, /*wait_ms=*/0, /*step_ms=*/10);
  EXPECT_TRUE(loop.reports.empty());  // the third step ends with the next call
  for (int64_t b = 3; b < 6; ++b) loop.Batch(0, b, /*wait_ms=*/30, /*step_ms=*/10);
  ASSERT_EQ(loop.reports.size(), 1u);
  const LoopReport& first = loop.reports[0];
  EXPECT_EQ(first.steps, 3);
  EXPECT_EQ(first.epoch, 0);
  EXPECT_EQ(first.batch, 3);  // batches delivered when the call for batch 3 starts
  EXPECT_EQ(first.batches_per_epoch, 10);
  EXPECT_FALSE(first.end_of_epoch);
  EXPECT_DOUBLE_EQ(first.step_s, 0.010);
  EXPECT_DOUBLE_EQ(first.wait_s, 0.0);
  EXPECT_EQ(first.bound, LoopBound::kStep);
  loop.End();
  ASSERT_EQ(loop.reports.size(), 3u);
  const LoopReport& second = loop.reports[1];  // steps 3..5: 30 ms waits, 10 ms steps
  EXPECT_EQ(second.steps, 3);
  EXPECT_DOUBLE_EQ(second.wait_s, 0.030);
  EXPECT_DOUBLE_EQ(second.wait_share, 0.75);
  EXPECT_EQ(second.bound, LoopBound::kLoader);
  const LoopReport& epoch = loop.reports[2];
  EXPECT_TRUE(epoch.end_of_epoch);
  EXPECT_EQ(epoch.steps, 6);
  EXPECT_EQ(epoch.batches, 6);
  EXPECT_EQ(epoch.samples, 48);
  EXPECT_DOUBLE_EQ(epoch.seconds, 0.150);
  EXPECT_DOUBLE_EQ(epoch.samples_per_s, 48 / 0.150);
  EXPECT_DOUBLE_EQ(epoch.wait_share, 90.0 / 150);
  // The next epoch's windows start at its first call: the pause is in none.
  loop.now += 500 * kMs;
  for (int64_t b = 0; b < 4; ++b) loop.Batch(1, b, 0, 10);
  ASSERT_EQ(loop.reports.size(), 4u);
  EXPECT_EQ(loop.reports[3].epoch, 1);
  EXPECT_DOUBLE_EQ(loop.reports[3].seconds, 0.030);
}

TEST(LoopMonitorTest, EpochOnlyReportsAndAnAbandonedEpoch) {
  ScriptedLoop loop;
  loop.monitor.SetReport(0, [&](const LoopReport& r) { loop.reports.push_back(r); });
  for (int64_t b = 0; b < 5; ++b) loop.Batch(0, b, 1, 1);
  loop.monitor.Interrupted();  // Reset mid-epoch: its step ends, no epoch report
  EXPECT_TRUE(loop.reports.empty());
  EXPECT_EQ(loop.monitor.Stats().steps, 5);
  loop.Batch(1, 0, 1, 1);
  loop.End();
  ASSERT_EQ(loop.reports.size(), 1u);
  EXPECT_EQ(loop.reports[0].epoch, 1);
  EXPECT_EQ(loop.reports[0].steps, 1);
  EXPECT_EQ(test::ErrorOf([&] { loop.monitor.SetReport(-1, nullptr); }),
            "report every_steps must be >= 0 (0: at the end of each epoch only), got -1");
}

TEST(LoopMonitorTest, ACallbackThatThrowsIsNotCalledAgainForTheSameSteps) {
  ScriptedLoop loop;
  int calls = 0;
  loop.monitor.SetReport(2, [&](const LoopReport&) {
    ++calls;
    throw std::runtime_error("stop");
  });
  loop.Batch(0, 0, 0, 1);
  loop.Batch(0, 1, 0, 1);
  EXPECT_THROW(loop.monitor.BeforeCall(), std::runtime_error);
  EXPECT_NO_THROW(loop.monitor.BeforeCall());
  EXPECT_EQ(calls, 1);
}

// Through the DataLoader: every batch the loop came back for is a step.
TEST(LoopMonitorTest, TheLoaderCountsStepsAndReports) {
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 2;
  DataLoader loader(std::make_shared<testing::IndexDataset>(40), options);
  std::vector<LoopReport> reports;
  loader.SetReport(4, [&](const LoopReport& r) { reports.push_back(r); });
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const Batch& batch : loader) (void)batch;
  }
  const StatsSnapshot s = loader.stats();
  EXPECT_EQ(s.steps, 20);
  EXPECT_EQ(s.delivered_samples, 80);
  // Per epoch: after steps 4 and 8 (10 batches), then the epoch.
  ASSERT_EQ(reports.size(), 6u);
  EXPECT_EQ(reports[0].epoch, 0);
  EXPECT_EQ(reports[0].batch, 4);
  EXPECT_EQ(reports[0].batches_per_epoch, 10);
  EXPECT_TRUE(reports[2].end_of_epoch);
  EXPECT_EQ(reports[2].steps, 10);
  EXPECT_EQ(reports[5].epoch, 1);
  EXPECT_EQ(reports[5].samples, 40);
}

// The verdict's side from real timings, with margins far from 10%: a 20 ms
// step over a loader that needs ~0 ms, and a loader that needs 40 ms per
// batch under a step of ~0 ms.
TEST(LoopMonitorTest, TheVerdictTellsASlowStepFromASlowLoader) {
  LoaderOptions options;
  options.batch_size = 2;
  options.num_workers = 1;
  {
    DataLoader loader(std::make_shared<testing::IndexDataset>(32), options);
    for (const Batch& batch : loader) {
      (void)batch;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const LoopReport r = Summarize(loader.stats(), {}, options.num_workers);
    EXPECT_EQ(r.bound, LoopBound::kStep) << r.verdict;
    EXPECT_GE(r.step_s, 0.019);
  }
  {
    DataLoader loader(
        std::make_shared<testing::SlowDataset>(12, std::chrono::milliseconds(20)), options);
    for (const Batch& batch : loader) (void)batch;
    const LoopReport r = Summarize(loader.stats(), {}, options.num_workers);
    EXPECT_EQ(r.bound, LoopBound::kLoader) << r.verdict;
    EXPECT_GE(r.wait_s, 0.030);
  }
}

}  // namespace
}  // namespace feedline
