#include "tools/tune_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

using ::testing::ElementsAre;

TEST(WorkerCandidates, EveryCountUpToFour) {
  EXPECT_THAT(WorkerCandidates(1), ElementsAre(1));
  EXPECT_THAT(WorkerCandidates(4), ElementsAre(1, 2, 3, 4));
}

TEST(WorkerCandidates, GeometricStepsBeyondFour) {
  EXPECT_THAT(WorkerCandidates(32), ElementsAre(1, 2, 3, 4, 6, 8, 12, 16, 24, 32));
  EXPECT_THAT(WorkerCandidates(10), ElementsAre(1, 2, 3, 4, 6, 8, 10));
  EXPECT_THAT(WorkerCandidates(7), ElementsAre(1, 2, 3, 4, 6, 7));
}

TEST(WorkerCandidates, NoneForZero) { EXPECT_TRUE(WorkerCandidates(0).empty()); }

TEST(PickRecommended, FewestWorkersWithinFivePercentOfTheBest) {
  const std::vector<TuneRow> rows = {
      {1, 1, 300, 0.9, 50}, {1, 2, 310, 0.9, 52}, {2, 1, 560, 0.5, 60},
      {2, 2, 590, 0.4, 62}, {4, 1, 600, 0.3, 80}, {4, 2, 610, 0.3, 90},
  };
  // 590 >= 0.95 * 610; 560 is not.
  EXPECT_EQ(PickRecommended(rows), 3);
}

TEST(PickRecommended, SmallestPrefetchThenLeastMemoryOnTies) {
  const std::vector<TuneRow> rows = {
      {2, 4, 600, 0.1, 70},
      {2, 2, 600, 0.1, 65},
      {2, 2, 600, 0.1, 60},
  };
  EXPECT_EQ(PickRecommended(rows), 2);
}

TEST(PickRecommended, NoRows) { EXPECT_EQ(PickRecommended({}), -1); }

// End to end, as small as it gets: 2 x 2 settings of 2 batches of 8.
TEST(TuneCommand, TinySweepWithTableJsonAndPlot) {
  testing::ScratchDir dir;
  testing::MakeImageFolder(dir / "imgs", 16);
  const std::string plot = dir / "tune.svg";
  const testing::RunResult r = testing::RunFeedline(
      {"tune", dir / "imgs", "--batch", "8", "--max-batches", "2", "--max-workers", "2",
       "--prefetch", "1,2", "--size", "64", "--plot", plot, "--json", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  ASSERT_EQ(j["results"].size(), 4u);
  std::set<std::pair<int, int>> settings;
  for (const auto& row : j["results"]) {
    settings.emplace(row["workers"].get<int>(), row["prefetch"].get<int>());
    EXPECT_GT(row["images_per_s"].get<double>(), 0);
    EXPECT_GT(row["peak_rss_mib"].get<double>(), 0);
  }
  EXPECT_EQ(settings, (std::set<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}}));
  ASSERT_TRUE(j["recommended"].is_object());
  EXPECT_EQ(settings.count(
                {j["recommended"]["workers"].get<int>(), j["recommended"]["prefetch"].get<int>()}),
            1u);

  // The table: a header, one row per setting, exactly one marked.
  int marked = 0, rows = 0;
  for (const std::string& line : testing::RunResult::Lines(r.out)) {
    // A row starts with its worker count (the online tuner's lines follow).
    const size_t first = line.find_first_not_of(' ');
    if (line.find(" MiB") != std::string::npos && first != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(line[first]))) {
      ++rows;
    }
    if (line.find("<- recommended") != std::string::npos) ++marked;
  }
  EXPECT_EQ(rows, 4);
  EXPECT_EQ(marked, 1);
  EXPECT_NE(r.out.find("recommended: --workers "), std::string::npos);

  // The online tuner ran too, and its path is drawn.
  ASSERT_TRUE(j["online"].is_object());
  EXPECT_GE(j["online"]["workers"].get<int>(), 1);
  EXPECT_LE(j["online"]["workers"].get<int>(), 2 * j["cores"].get<int>());
  EXPECT_NE(r.out.find("online tuner (--workers auto --prefetch auto): settled at"),
            std::string::npos);
  for (const auto& row : j["results"]) EXPECT_GT(row["warmup_s"].get<double>(), 0);

  const std::string svg = testing::ReadWhole(plot);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find(">prefetch 1</text>"), std::string::npos);
  EXPECT_NE(svg.find(">prefetch 2</text>"), std::string::npos);
  EXPECT_NE(svg.find(">online tuner (auto)</text>"), std::string::npos);
}

TEST(SteadyImagesPerSecond, CountsOnlyTheBatchesAfterTheWarmUp) {
  // Batches of 10 delivered at 1, 2, 2.5, 3, 3.5 s: after a warm-up of 2,
  // three batches in 1.5 s.
  EXPECT_DOUBLE_EQ(SteadyImagesPerSecond({1, 2, 2.5, 3, 3.5}, 10, 2), 20);
  EXPECT_EQ(SteadyImagesPerSecond({1, 2}, 10, 2), 0);
  EXPECT_EQ(WarmupBatches(2, 4), 9);
  EXPECT_EQ(WarmupBatches(1, 1), 3);
}

TEST(PickRecommended, StopsAddingWorkersWhenThroughputStopsRising) {
  // The article's table: 8 workers beat 4 by far, 16 are slower than 8.
  const std::vector<TuneRow> rows = {
      {4, 2, 320, 0.5, 80}, {8, 2, 580, 0.2, 90}, {16, 2, 510, 0.2, 120}};
  EXPECT_EQ(PickRecommended(rows), 1);
}

}  // namespace
}  // namespace feedline::cli
