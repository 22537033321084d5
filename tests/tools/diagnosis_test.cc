#include "tools/diagnosis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tools/report.h"

namespace feedline::cli {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kSecond = 1'000'000'000;

// A 10 s run with `workers` workers each busy `utilization` of the time, the
// consumer waiting `wait` of it, and the worker time split between the
// stages by `shares` (read, decode, transform, collate).
BenchResult MakeRun(int workers, int cores, double step_ms, double wait, double utilization,
                    std::array<double, 4> shares = {0.1, 0.6, 0.25, 0.05}) {
  BenchResult r;
  r.settings.source = "imgs";
  r.settings.pipeline = "train";
  r.settings.batch_size = 64;
  r.settings.workers = workers;
  r.settings.prefetch = 2;
  r.settings.step_ms = step_ms;
  r.settings.cores = cores;
  r.wall_s = 10;
  r.images = 6400;
  r.batches = 100;
  r.stats.elapsed_ns = 10 * kSecond;
  r.stats.consumer_wait_ns = static_cast<int64_t>(wait * 10 * kSecond);
  const auto busy = static_cast<int64_t>(utilization * 10 * kSecond);
  for (int w = 0; w < workers; ++w) r.stats.workers.push_back({busy, 6400 / workers});
  for (int i = 0; i < 4; ++i)
    r.stats.stage_ns[i] = static_cast<int64_t>(shares[i] * busy * workers);
  return r;
}

std::string Text(const Diagnosis& d) {
  std::string text;
  for (const std::string& s : d.sentences) text += s + " ";
  return text;
}

TEST(Diagnosis, ComputeBoundSaysHowIdleTheLoaderIs) {
  const Diagnosis d = Diagnose(
      MakeRun(/*workers=*/4, /*cores=*/8, /*step_ms=*/100, /*wait=*/0.02, /*utilization=*/0.35));
  EXPECT_EQ(d.bottleneck, Bottleneck::kCompute);
  EXPECT_THAT(Text(d),
              HasSubstr("The training step is the bottleneck: the loader is idle 65% of the time"));
  // 4 workers at 35% do the work of 1.4; with 25% headroom 2 are enough.
  EXPECT_EQ(d.suggested_workers, 2);
  EXPECT_THAT(Text(d), HasSubstr("Lower --workers to 2"));
}

TEST(Diagnosis, ComputeBoundWithBusyWorkersChangesNothing) {
  const Diagnosis d = Diagnose(MakeRun(4, 8, 100, 0.05, 0.8));
  EXPECT_EQ(d.bottleneck, Bottleneck::kCompute);
  EXPECT_EQ(d.suggested_workers, 0);
  EXPECT_THAT(Text(d), HasSubstr("Nothing to change"));
}

TEST(Diagnosis, LoaderBoundAsksForTheWorkersThatWouldKeepUp) {
  // Waiting half the time: the loader must be twice as fast, 2 -> 4 workers.
  const Diagnosis d = Diagnose(MakeRun(2, 8, 50, 0.5, 0.95));
  EXPECT_EQ(d.bottleneck, Bottleneck::kLoader);
  EXPECT_EQ(d.suggested_workers, 4);
  EXPECT_THAT(Text(d), HasSubstr("Raise --workers to 4."));
  EXPECT_EQ(d.dominant_stage, "decode");
  EXPECT_THAT(Text(d), HasSubstr("Decoding takes 60% of worker time"));
}

TEST(Diagnosis, LoaderBoundBeyondTheCoresAsksForAllOfThem) {
  // Needs 2 / 0.2 = 10 workers; only 4 cores.
  const Diagnosis d = Diagnose(MakeRun(2, 4, 50, 0.8, 0.95));
  EXPECT_EQ(d.suggested_workers, 4);
  EXPECT_THAT(Text(d), HasSubstr("Raise --workers to 4 (one per core)"));
  EXPECT_THAT(Text(d), HasSubstr("about 10 cores"));
}

TEST(Diagnosis, LoaderBoundOnEveryCoreNamesTheStageToCut) {
  const Diagnosis d = Diagnose(MakeRun(4, 4, 50, 0.6, 0.97, {0.7, 0.2, 0.05, 0.05}));
  EXPECT_EQ(d.suggested_workers, 0);
  EXPECT_EQ(d.dominant_stage, "read");
  EXPECT_THAT(Text(d), AllOf(HasSubstr("Every core is already loading"),
                             HasSubstr("Reading the files takes 70%")));
}

TEST(Diagnosis, SlowReadsFromAServerAskForTheNodeCache) {
  BenchResult r = MakeRun(4, 4, 50, 0.6, 0.97, {0.7, 0.2, 0.05, 0.05});
  r.settings.source = "s3://bucket/pack/";
  r.settings.remote = true;
  EXPECT_THAT(Text(Diagnose(r)), AllOf(HasSubstr("Reading takes 70%"),
                                       HasSubstr("give --cache-dir DIR"),
                                       ::testing::Not(HasSubstr("page cache"))));
  r.settings.cached = true;
  EXPECT_THAT(Text(Diagnose(r)), AllOf(HasSubstr("being downloaded into the cache"),
                                       ::testing::Not(HasSubstr("give --cache-dir"))));
}

TEST(Diagnosis, IdleWorkersWhileWaitingAskForPrefetch) {
  BenchResult r = MakeRun(4, 8, 50, 0.4, 0.3);
  r.wall_s = 10;
  r.images = 640;  // 15 ms per image: real work, not engine overhead
  const Diagnosis d = Diagnose(r);
  EXPECT_EQ(d.bottleneck, Bottleneck::kLoader);
  EXPECT_EQ(d.suggested_prefetch, 4);
  EXPECT_THAT(Text(d),
              AllOf(HasSubstr("more workers will not help"), HasSubstr("Raise --prefetch to 4")));
}

TEST(Diagnosis, TinyWorkIsTheEnginesOwnCost) {
  BenchResult r = MakeRun(2, 8, 0, 0.5, 0.1, {0, 0, 0, 0});
  r.images = 10'000'000;  // 1 us per image
  const Diagnosis d = Diagnose(r);
  EXPECT_EQ(d.dominant_stage, "other");
  EXPECT_EQ(d.suggested_prefetch, 0);
  EXPECT_THAT(Text(d), HasSubstr("the engine's own per-sample cost"));
}

TEST(Diagnosis, NoStepMeansTopSpeed) {
  const Diagnosis d = Diagnose(MakeRun(2, 8, 0, 0.9, 0.95));
  EXPECT_EQ(d.bottleneck, Bottleneck::kLoader);
  EXPECT_THAT(Text(d), HasSubstr("No training step was simulated"));
  EXPECT_EQ(d.suggested_workers, 8);
}

TEST(Diagnosis, NoWorkersMovesLoadingOffTheTrainingThread) {
  const Diagnosis d = Diagnose(MakeRun(0, 8, 50, 0.7, 0));
  EXPECT_EQ(d.suggested_workers, 4);
  EXPECT_THAT(Text(d), HasSubstr("--workers 0): raise --workers to 4"));
}

TEST(Diagnosis, ErrorsPointToVerify) {
  BenchResult r = MakeRun(2, 2, 50, 0.05, 0.5);
  r.stats.errors = 3;
  r.stats.errors_by_reason = {{"decode", 2}, {"format", 1}};
  const Diagnosis d = Diagnose(r);
  EXPECT_THAT(d.sentences, Contains(HasSubstr("3 samples failed to load (decode: 2, format: 1)")));
  EXPECT_THAT(d.sentences, Contains(HasSubstr("feedline verify imgs")));
}

TEST(Diagnosis, NoErrorsNoErrorSentence) {
  const Diagnosis d = Diagnose(MakeRun(2, 2, 50, 0.05, 0.5));
  EXPECT_THAT(Text(d), Not(HasSubstr("failed to load")));
}

}  // namespace
}  // namespace feedline::cli
