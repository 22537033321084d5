// What the online tuner costs the consumer per batch (docs/tuning.md,
// "What it costs"). The engine calls TunerDriver::AfterBatch(stats, NowNs())
// after every delivered batch; most calls only compare the time with the
// last check, and one every TunerDriver::kCheckEveryNs reads the counters
// and feeds the Tuner (a window, and perhaps a decision, every 200 ms).
//
//   BM_TunerPerBatch   a batch's cost: the clock read and AfterBatch, with
//                      the real clock (a check every 20 ms of real time).
//   BM_TunerCheck      one check: every call 20 ms later in simulated time,
//                      so each reads the counters and feeds the tuner; every
//                      10th completes a window and decides (a loader-bound
//                      workload: the consumer waits all the time).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "src/loader/stats_collector.h"
#include "src/loader/tuner_driver.h"

namespace {

using feedline::internal::NowNs;
using feedline::internal::StatsCollector;
using feedline::internal::TunerConfig;
using feedline::internal::TunerDriver;

TunerConfig Config() {
  TunerConfig config;
  config.max_workers = 2;
  return config;
}

void BM_TunerPerBatch(benchmark::State& state) {
  StatsCollector stats(2);
  stats.MarkStart();
  int applied = 0;
  TunerDriver driver(
      Config(), [&](int, int) { ++applied; }, [] { return int64_t{38'535'168}; },
      [] { return int64_t{0}; });
  for (auto _ : state) {
    stats.AddBatch();
    driver.AfterBatch(stats, NowNs());
  }
  benchmark::DoNotOptimize(applied);
}
BENCHMARK(BM_TunerPerBatch);

void BM_TunerCheck(benchmark::State& state) {
  StatsCollector stats(2);
  stats.MarkStart();
  int applied = 0;
  TunerDriver driver(
      Config(), [&](int, int) { ++applied; }, [] { return int64_t{38'535'168}; },
      [] { return int64_t{0}; });
  int64_t now = 0;
  for (auto _ : state) {
    // 20 ms of a loader-bound run: 2 batches, all of it waited for.
    now += TunerDriver::kCheckEveryNs;
    stats.AddBatch();
    stats.AddBatch();
    stats.AddWait(TunerDriver::kCheckEveryNs);
    stats.AddWorker(0, TunerDriver::kCheckEveryNs, 64);
    stats.AddWorker(1, TunerDriver::kCheckEveryNs, 64);
    driver.AfterBatch(stats, now);
  }
  benchmark::DoNotOptimize(applied);
}
BENCHMARK(BM_TunerCheck);

}  // namespace

BENCHMARK_MAIN();
