// TunerDriver: reads the loader's counters at most every kCheckEveryNs and
// applies the tuner's setting only when it changes. Simulated times only.
#include "src/loader/tuner_driver.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace feedline::internal {
namespace {

constexpr int64_t kDriverMs = 1'000'000;

TEST(TunerDriver, AppliesOnlyChangesAndReadsAtMostEvery20Ms) {
  TunerConfig config;
  config.max_workers = 8;
  std::vector<std::pair<int, int>> applied;
  int slot_reads = 0;
  TunerDriver driver(
      config, [&](int w, int s) { applied.emplace_back(w, s); },
      [&] {
        ++slot_reads;
        return int64_t{1} << 20;
      },
      [] { return int64_t{0}; });
  EXPECT_EQ(driver.workers(), 4);
  StatsCollector stats(8);
  stats.MarkStart();
  // A loader-bound run: every batch costs the 4 workers 40 ms, the loop
  // waits all the time. One batch per 10 ms of simulated time.
  for (int64_t b = 1; b <= 100; ++b) {
    stats.AddBatch();
    stats.AddWait(10 * kDriverMs);
    for (int w = 0; w < driver.workers(); ++w) stats.AddWorker(w, 10 * kDriverMs, 16);
    driver.AfterBatch(stats, b * 10 * kDriverMs);
  }
  // 1 s in 10 ms steps: a check every other batch at most.
  EXPECT_LE(slot_reads, 51);
  EXPECT_GE(slot_reads, 40);
  ASSERT_GE(applied.size(), 2u);
  // Slots of 1 MiB are cheap: the fixed default (4 workers x 2) from the
  // first check that knows their size; then 4 -> 5 workers, the first window.
  EXPECT_EQ(applied[0], std::make_pair(4, 8));
  EXPECT_EQ(applied[1].first, 5);
  for (size_t i = 1; i < applied.size(); ++i) EXPECT_NE(applied[i], applied[i - 1]);
  const TunerStats snapshot = driver.Snapshot();
  EXPECT_TRUE(snapshot.enabled);
  EXPECT_EQ(snapshot.decisions, static_cast<int64_t>(snapshot.log.size()));
  EXPECT_EQ(snapshot.slot_bytes, int64_t{1} << 20);
}

}  // namespace
}  // namespace feedline::internal
