// End-to-end tests of `feedline bench`: they run the built binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "tests/tools/run_feedline.h"

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;
using testing::MakeImageFolder;
using testing::RunFeedline;
using testing::RunResult;
using testing::ScratchDir;

// The fields every bench JSON has, with their kinds.
void ExpectBenchJson(const nlohmann::json& j) {
  for (const char* key : {"images_per_s", "wait_fraction", "peak_rss_mib", "elapsed_s"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_number()) << key;
  }
  EXPECT_TRUE(j["first_batch_s"].is_number());
  EXPECT_GE(j["first_batch_s"].get<double>(), 0);
  EXPECT_GT(j["images_per_s"].get<double>(), 0);
  EXPECT_GE(j["wait_fraction"].get<double>(), 0);
  EXPECT_LE(j["wait_fraction"].get<double>(), 1);
  EXPECT_GT(j["peak_rss_mib"].get<double>(), 0);
  ASSERT_TRUE(j["stages"].is_object());
  for (const char* stage : {"read", "decode", "transform", "collate"}) {
    ASSERT_TRUE(j["stages"].contains(stage)) << stage;
    EXPECT_GE(j["stages"][stage].get<double>(), 0);
  }
  EXPECT_TRUE(j["errors"].is_object());
  for (const char* key : {"workers", "prefetch", "batch"})
    EXPECT_TRUE(j[key].is_number_integer()) << key;
  EXPECT_TRUE(j["diagnosis"]["text"].is_array());
}

TEST(BenchCommand, SyntheticJson) {
  const RunResult r = RunFeedline({"bench", "--synthetic", "1000", "--batch", "64", "--workers",
                                   "2", "--prefetch", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  ExpectBenchJson(j);
  EXPECT_EQ(j["images"], 1000);
  EXPECT_EQ(j["batches"], 16);
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["prefetch"], 3);
  EXPECT_EQ(j["batch"], 64);
  EXPECT_EQ(j["pipeline"], "index");
  EXPECT_EQ(j["errors_total"], 0);
  EXPECT_TRUE(j["errors"].empty());
  // The text report comes first.
  EXPECT_THAT(
      r.out,
      HasSubstr("feedline bench: synthetic (index), 1000 images in 16 batches of 64, 2 workers"));
  EXPECT_THAT(r.out, HasSubstr("\n  throughput "));
  EXPECT_THAT(r.out, HasSubstr("\ndiagnosis: loader-bound."));
}

TEST(BenchCommand, WithoutJsonNoJson) {
  const RunResult r = RunFeedline({"bench", "--synthetic", "100", "--workers", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("throughput"));
  EXPECT_EQ(r.out.find('{'), std::string::npos);
}

TEST(BenchCommand, EpochsAndAutoWorkers) {
  const RunResult r =
      RunFeedline({"bench", "--synthetic", "100", "--batch", "10", "--epochs", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["images"], 300);
  EXPECT_EQ(j["epochs"], 3);
  // auto: the tuner, up to one worker per CPU.
  EXPECT_TRUE(j["workers_auto"].get<bool>());
  ASSERT_TRUE(j["tuner"].is_object());
  EXPECT_GE(j["tuner"]["max_workers"].get<int>(), 1);
  EXPECT_LE(j["tuner"]["max_workers"].get<int>(), j["cores"].get<int>());
  EXPECT_LE(j["workers"].get<int>(), j["tuner"]["max_workers"].get<int>());
  EXPECT_GE(j["tuner"]["slots"].get<int>(), 2);
}

TEST(BenchCommand, StepMsIsSpentPerBatch) {
  const RunResult r = RunFeedline({"bench", "--synthetic", "40", "--batch", "10", "--workers", "1",
                                   "--step-ms", "30", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["step_ms"], 30.0);
  EXPECT_GE(j["elapsed_s"].get<double>(), 4 * 0.030);
}

TEST(BenchCommand, ImageFolderCountsErrorsByReason) {
  ScratchDir dir;
  const std::vector<std::string> broken = MakeImageFolder(dir / "imgs", 20, /*broken=*/3);
  const RunResult r =
      RunFeedline({"bench", dir / "imgs", "--batch", "8", "--workers", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  ExpectBenchJson(j);
  EXPECT_EQ(j["images"], 20);  // skip drops the broken ones
  EXPECT_EQ(j["errors_total"], 3);
  EXPECT_EQ(j["skipped"], 3);
  int64_t by_reason = 0;
  for (const auto& [reason, count] : j["errors"].items()) by_reason += count.get<int64_t>();
  EXPECT_EQ(by_reason, 3);
  EXPECT_GT(j["stages"]["read"].get<double>(), 0);
  EXPECT_GT(j["stages"]["decode"].get<double>(), 0);
  EXPECT_GT(j["stages"]["transform"].get<double>(), 0);
  EXPECT_THAT(r.out, HasSubstr("  errors          3 ("));
  EXPECT_THAT(r.out, HasSubstr("feedline verify " + (dir / "imgs")));
}

TEST(BenchCommand, ErrorPolicyReplaceKeepsBatchesFull) {
  ScratchDir dir;
  MakeImageFolder(dir / "imgs", 21, /*broken=*/3);
  const RunResult r = RunFeedline({"bench", dir / "imgs", "--batch", "8", "--workers", "2",
                                   "--error-policy", "replace", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = r.Json();
  EXPECT_EQ(j["images"], 24);
  EXPECT_EQ(j["replaced"], 3);
  EXPECT_EQ(j["error_policy"], "replace");
}

TEST(BenchCommand, ErrorPolicyRaiseFailsNamingTheFile) {
  ScratchDir dir;
  const std::vector<std::string> broken = MakeImageFolder(dir / "imgs", 12, /*broken=*/2);
  const RunResult r = RunFeedline({"bench", dir / "imgs", "--batch", "4", "--workers", "1",
                                   "--pipeline", "val", "--error-policy", "raise"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("feedline bench: error: "));
  bool named = false;
  for (const std::string& path : broken) named = named || r.err.find(path) != std::string::npos;
  EXPECT_TRUE(named) << r.err;
}

TEST(BenchCommand, EveryPipeline) {
  ScratchDir dir;
  MakeImageFolder(dir / "imgs", 12);
  for (const std::string pipeline : {"train", "val", "decode", "read"}) {
    const RunResult r = RunFeedline({"bench", dir / "imgs", "--pipeline", pipeline, "--batch", "8",
                                     "--workers", "2", "--size", "64", "--json"});
    ASSERT_EQ(r.exit_code, 0) << pipeline << ": " << r.err;
    const nlohmann::json j = r.Json();
    EXPECT_EQ(j["pipeline"], pipeline);
    EXPECT_EQ(j["images"], 12) << pipeline;
    EXPECT_EQ(j["errors_total"], 0) << pipeline;
    EXPECT_GT(j["stages"]["read"].get<double>(), 0) << pipeline;
    if (pipeline == "read") {
      EXPECT_EQ(j["stages"]["decode"].get<double>(), 0);
    } else {
      EXPECT_GT(j["stages"]["decode"].get<double>(), 0) << pipeline;
    }
    if (pipeline == "decode" || pipeline == "read")
      EXPECT_EQ(j["stages"]["transform"].get<double>(), 0);
  }
}

TEST(BenchCommand, FileList) {
  ScratchDir dir;
  MakeImageFolder(dir / "imgs", 12);
  std::ofstream list(dir / "list.txt");
  int listed = 0;
  for (const std::string& file : testing::FilesUnder(dir / "imgs")) {
    list << "imgs/" << file << " " << (listed++ % 4) << "\n";
  }
  list.close();
  const RunResult r =
      RunFeedline({"bench", dir / "list.txt", "--batch", "4", "--workers", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.Json()["images"], 12);
}

TEST(BenchCommand, MaxBatches) {
  const RunResult r = RunFeedline(
      {"bench", "--synthetic", "1000", "--batch", "10", "--max-batches", "7", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.Json()["batches"], 7);
  EXPECT_EQ(r.Json()["images"], 70);
}

}  // namespace
}  // namespace feedline::cli
