// StatsCollector: the loader's live counters, added by workers without a
// lock and read as one snapshot (stats()) or as the tuner's totals.
#include "src/loader/stats_collector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace feedline::internal {
namespace {

TEST(StatsCollector, ANewCollectorHasCountedNothing) {
  const StatsCollector stats(3);
  const StatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(s.batches, 0);
  EXPECT_EQ(s.errors, 0);
  EXPECT_EQ(s.elapsed_ns, 0);       // not started
  EXPECT_EQ(s.first_batch_ns, -1);  // no batch yet
  ASSERT_EQ(s.workers.size(), 3u);
  EXPECT_TRUE(s.errors_by_reason.empty());
}

TEST(StatsCollector, NoWorkersCountsTheCallersThreadAsWorkerZero) {
  StatsCollector stats(0);
  stats.AddWorker(-1, 100, 2);
  const StatsSnapshot s = stats.Snapshot();
  ASSERT_EQ(s.workers.size(), 1u);
  EXPECT_EQ(s.workers[0].busy_ns, 100);
  EXPECT_EQ(s.workers[0].samples, 2);
}

TEST(StatsCollector, CountsWhatEachPartAdds) {
  StatsCollector stats(2);
  stats.AddWorker(0, 1000, 3);
  stats.AddWorker(1, 500, 1);
  stats.AddWorker(1, 250, 1);
  stats.AddBatch();
  stats.AddBatch();
  stats.AddWait(70);
  stats.AddError("decode");
  stats.AddError("decode");
  stats.AddError("io");
  stats.AddSkipped();
  stats.AddReplaced();
  stats.AddFailedSubstitutes(2);
  std::array<int64_t, kNumStages> stages{};
  stages[static_cast<int>(Stage::kDecode)] = 40;
  stats.AddStages(stages);
  stats.AddStages(stages);

  const StatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.batches, 2);
  EXPECT_EQ(s.consumer_wait_ns, 70);
  EXPECT_EQ(s.errors, 3);
  EXPECT_EQ(s.errors_by_reason.at("decode"), 2);
  EXPECT_EQ(s.errors_by_reason.at("io"), 1);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_EQ(s.replaced, 1);
  EXPECT_EQ(s.failed_substitutes, 2);
  EXPECT_EQ(s.stage_ns[static_cast<int>(Stage::kDecode)], 80);
  EXPECT_EQ(s.stage_ns[static_cast<int>(Stage::kRead)], 0);
  EXPECT_EQ(s.workers[0].busy_ns, 1000);
  EXPECT_EQ(s.workers[1].busy_ns, 750);
  EXPECT_EQ(s.workers[1].samples, 2);

  const StatsCollector::Totals t = stats.ReadTotals();
  EXPECT_EQ(t.batches, 2);
  EXPECT_EQ(t.samples, 5);
  EXPECT_EQ(t.wait_ns, 70);
  EXPECT_EQ(t.busy_ns, 1750);
}

TEST(StatsCollector, TheFirstMarksWinAndTimeFromTheStart) {
  StatsCollector stats(1);
  stats.MarkStart();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stats.MarkFirstBatch();
  const StatsSnapshot first = stats.Snapshot();
  EXPECT_GE(first.first_batch_ns, 5'000'000);
  EXPECT_GE(first.elapsed_ns, first.first_batch_ns);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  stats.MarkStart();       // later calls change nothing
  stats.MarkFirstBatch();
  const StatsSnapshot later = stats.Snapshot();
  EXPECT_EQ(later.first_batch_ns, first.first_batch_ns);
  EXPECT_GE(later.elapsed_ns, first.elapsed_ns + 2'000'000);
}

TEST(StatsCollector, WorkersAddFromManyThreadsWithoutLosingCounts) {
  constexpr int kThreads = 4;
  constexpr int kAdds = 10000;
  StatsCollector stats(kThreads);
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&stats, w] {
      for (int i = 0; i < kAdds; ++i) {
        stats.AddWorker(w, 1, 1);
        if (i % 100 == 0) stats.AddError("shape");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const StatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.samples, kThreads * kAdds);
  EXPECT_EQ(s.errors_by_reason.at("shape"), kThreads * kAdds / 100);
  for (const WorkerStats& w : s.workers) EXPECT_EQ(w.samples, kAdds);
}

}  // namespace
}  // namespace feedline::internal
