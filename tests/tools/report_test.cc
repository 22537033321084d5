#include "tools/report.h"

#include <gtest/gtest.h>

#include "tools/diagnosis.h"

namespace feedline::cli {
namespace {

constexpr int64_t kReportSecond = 1'000'000'000;

// Two workers over 2 s: 1.0 s read, 1.5 s decode, 0.5 s transform, 0.2 s
// collate, 0.8 s not in any stage.
BenchResult SampleResult() {
  BenchResult r;
  r.settings.source = "/data/images";
  r.settings.pipeline = "train";
  r.settings.batch_size = 32;
  r.settings.workers = 2;
  r.settings.prefetch = 3;
  r.settings.step_ms = 5;
  r.settings.cores = 8;
  r.images = 640;
  r.batches = 20;
  r.wall_s = 2.0;
  r.peak_rss_mib = 123.5;
  r.stats.samples = 643;
  r.stats.batches = 20;
  r.stats.errors = 3;
  r.stats.skipped = 3;
  r.stats.errors_by_reason = {{"decode", 2}, {"io", 1}};
  r.stats.stage_ns = {1 * kReportSecond, 3 * kReportSecond / 2, kReportSecond / 2, kReportSecond / 5};
  r.stats.workers = {{2 * kReportSecond, 320}, {2 * kReportSecond, 323}};
  r.stats.consumer_wait_ns = kReportSecond / 2;
  r.stats.first_batch_ns = kReportSecond / 4;
  r.stats.elapsed_ns = 2 * kReportSecond;
  return r;
}

TEST(Report, DerivedFigures) {
  const BenchResult r = SampleResult();
  EXPECT_DOUBLE_EQ(ImagesPerSecond(r), 320.0);
  EXPECT_DOUBLE_EQ(FirstBatchSeconds(r), 0.25);
  EXPECT_DOUBLE_EQ(WaitFraction(r), 0.25);
  EXPECT_DOUBLE_EQ(WorkerSeconds(r), 4.0);
  EXPECT_DOUBLE_EQ(WorkerUtilization(r), 1.0);
}

TEST(Report, StageSharesAddUpWithOther) {
  const std::array<double, kNumShares> shares = StageShares(SampleResult());
  EXPECT_DOUBLE_EQ(shares[0], 0.25);
  EXPECT_DOUBLE_EQ(shares[1], 0.375);
  EXPECT_DOUBLE_EQ(shares[2], 0.125);
  EXPECT_DOUBLE_EQ(shares[3], 0.05);
  EXPECT_NEAR(shares[4], 0.2, 1e-12);
  EXPECT_STREQ(ShareName(1), "decode");
  EXPECT_STREQ(ShareName(4), "other");
}

TEST(Report, WithoutWorkerTimesSharesComeFromTheStages) {
  BenchResult r = SampleResult();
  r.stats.workers.clear();
  EXPECT_DOUBLE_EQ(WorkerSeconds(r), 3.2);
  EXPECT_DOUBLE_EQ(WorkerUtilization(r), -1);
  EXPECT_DOUBLE_EQ(StageShares(r)[4], 0.0);
}

TEST(Report, NothingRanGivesZeroes) {
  BenchResult r;
  EXPECT_EQ(ImagesPerSecond(r), 0);
  EXPECT_EQ(FirstBatchSeconds(r), -1);
  for (double share : StageShares(r)) EXPECT_EQ(share, 0);
  EXPECT_NO_THROW(FormatReport(r, Diagnose(r)));
  EXPECT_TRUE(ReportJson(r, Diagnose(r))["first_batch_s"].is_null());
}

TEST(Report, JsonHasTheDocumentedFields) {
  const BenchResult r = SampleResult();
  const nlohmann::json json = ReportJson(r, Diagnose(r));
  EXPECT_DOUBLE_EQ(json["images_per_s"].get<double>(), 320.0);
  EXPECT_DOUBLE_EQ(json["first_batch_s"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(json["wait_fraction"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(json["peak_rss_mib"].get<double>(), 123.5);
  EXPECT_DOUBLE_EQ(json["stages"]["read"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(json["stages"]["decode"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(json["stages"]["transform"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(json["stages"]["collate"].get<double>(), 0.2);
  EXPECT_EQ(json["errors"]["decode"].get<int>(), 2);
  EXPECT_EQ(json["errors"]["io"].get<int>(), 1);
  EXPECT_EQ(json["errors_total"].get<int>(), 3);
  EXPECT_EQ(json["workers"].get<int>(), 2);
  EXPECT_EQ(json["prefetch"].get<int>(), 3);
  EXPECT_EQ(json["batch"].get<int>(), 32);
  EXPECT_EQ(json["images"].get<int>(), 640);
  EXPECT_EQ(json["pipeline"].get<std::string>(), "train");
  EXPECT_EQ(json["diagnosis"]["bottleneck"].get<std::string>(), "loader");
  EXPECT_FALSE(json["diagnosis"]["text"].empty());
}

TEST(Report, TextShowsEveryFigure) {
  const BenchResult r = SampleResult();
  const std::string text = FormatReport(r, Diagnose(r));
  EXPECT_NE(text.find("/data/images (train)"), std::string::npos) << text;
  EXPECT_NE(text.find("320.0 images/s"), std::string::npos) << text;
  EXPECT_NE(text.find("first batch     0.250 s"), std::string::npos) << text;
  EXPECT_NE(text.find("consumer wait   25.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("    decode        37.5%      1.500 s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    other         20.0%      0.800 s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("peak RSS        123.5 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("3 (decode: 2, io: 1), 3 skipped"), std::string::npos) << text;
  EXPECT_NE(text.find("diagnosis: loader-bound."), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

// Under replace a substitute may be broken too; the summary counts the
// broken samples and the failed substitutes apart (13 broken samples and 4
// failed substitutes, not 17 broken samples).
TEST(Report, ReplaceCountsFailedSubstitutesApart) {
  BenchResult r = SampleResult();
  r.settings.error_policy = "replace";
  r.stats.errors = 13;
  r.stats.failed_substitutes = 4;
  r.stats.skipped = 0;
  r.stats.replaced = 13;
  r.stats.errors_by_reason = {{"decode", 13}};
  EXPECT_EQ(FailedSubstitutes(r.stats), 4);
  EXPECT_EQ(BrokenSamples(r.stats), 13);
  const std::string text = FormatReport(r, Diagnose(r));
  EXPECT_NE(text.find("  errors          13 broken samples replaced, 4 substitutes also failed "
                      "(decode: 13)\n"),
            std::string::npos)
      << text;
  const nlohmann::json json = ReportJson(r, Diagnose(r));
  EXPECT_EQ(json["broken_samples"], 13);
  EXPECT_EQ(json["failed_substitutes"], 4);
  EXPECT_EQ(json["errors_total"], 17);
  // Every substitute loaded: the plain summary.
  r.stats.failed_substitutes = 0;
  EXPECT_EQ(FailedSubstitutes(r.stats), 0);
  EXPECT_NE(FormatReport(r, Diagnose(r)).find("13 (decode: 13), 13 replaced\n"), std::string::npos);
  // Skip has no substitutes.
  EXPECT_EQ(FailedSubstitutes(SampleResult().stats), 0);
  EXPECT_EQ(BrokenSamples(SampleResult().stats), 3);
}

}  // namespace
}  // namespace feedline::cli
