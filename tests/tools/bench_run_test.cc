#include "tools/bench_run.h"

#include <gtest/gtest.h>

#include "feedline/error.h"
#include "feedline/synth/index_dataset.h"

namespace feedline::cli {
namespace {

BenchSettings Settings(int64_t batch, int workers, int64_t epochs = 1) {
  BenchSettings s;
  s.source = "synthetic";
  s.pipeline = "index";
  s.batch_size = batch;
  s.workers = workers;
  s.prefetch = 2;
  s.epochs = epochs;
  s.cores = 2;
  return s;
}

TEST(MakeLoaderOptions, FollowsTheSettings) {
  BenchSettings s = Settings(32, 3, 2);
  s.prefetch = 4;
  s.seed = 9;
  s.error_policy = "replace";
  s.pipeline = "train";
  LoaderOptions o = MakeLoaderOptions(s);
  EXPECT_EQ(o.batch_size, 32);
  EXPECT_EQ(o.num_workers, 3);
  EXPECT_EQ(o.prefetch_factor, 4);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.error_policy, ErrorPolicy::kReplace);
  EXPECT_TRUE(o.shuffle);
  EXPECT_TRUE(o.persistent_workers);

  s.pipeline = "val";
  s.epochs = 1;
  o = MakeLoaderOptions(s);
  EXPECT_FALSE(o.shuffle);
  EXPECT_FALSE(o.persistent_workers);

  s.error_policy = "ignore";
  EXPECT_THROW(MakeLoaderOptions(s), Error);
}

TEST(RunBench, CountsEverySample) {
  const BenchResult r = RunBench(std::make_shared<synth::IndexDataset>(105), Settings(10, 2));
  EXPECT_EQ(r.images, 105);
  EXPECT_EQ(r.batches, 11);
  EXPECT_EQ(r.stats.samples, 105);
  EXPECT_EQ(r.stats.batches, 11);
  EXPECT_GT(r.wall_s, 0);
  EXPECT_GT(r.peak_rss_mib, 0);
  EXPECT_GE(r.stats.first_batch_ns, 0);
  EXPECT_EQ(r.settings.workers, 2);
}

TEST(RunBench, StopsAfterMaxBatches) {
  const BenchResult r =
      RunBench(std::make_shared<synth::IndexDataset>(100), Settings(10, 2, /*epochs=*/3),
               /*max_batches=*/4);
  EXPECT_EQ(r.batches, 4);
  EXPECT_EQ(r.images, 40);
}

TEST(RunBench, RunsEveryEpoch) {
  const BenchResult r =
      RunBench(std::make_shared<synth::IndexDataset>(50), Settings(8, 1, /*epochs=*/3));
  EXPECT_EQ(r.images, 150);
  EXPECT_EQ(r.batches, 21);
}

TEST(RunBench, InTheCallersThread) {
  const BenchResult r = RunBench(std::make_shared<synth::IndexDataset>(20), Settings(4, 0));
  EXPECT_EQ(r.images, 20);
  EXPECT_EQ(WorkerUtilization(r), -1);
}

TEST(RunBench, StepSleepsPerBatch) {
  BenchSettings s = Settings(10, 1);
  s.step_ms = 20;
  const BenchResult r = RunBench(std::make_shared<synth::IndexDataset>(50), s);
  // sleep_for never returns early: 5 steps take at least 100 ms.
  EXPECT_GE(r.wall_s, 0.1);
}

TEST(RunBench, ReportsProgress) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ProgressReporter progress(file, ProgressReporter::Mode::kBar);
  RunBench(std::make_shared<synth::IndexDataset>(30), Settings(10, 1), -1, &progress);
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  std::fclose(file);
  EXPECT_NE(text.find("epoch 1/1 ["), std::string::npos) << text;
}

}  // namespace
}  // namespace feedline::cli
