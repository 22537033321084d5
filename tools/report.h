// The result of a `feedline bench` run and the two ways it is shown: a text
// report for people and a JSON object for scripts. Pure functions of a
// BenchResult, so they are tested without running a loader.
//
// Thread safety: plain values and pure functions.
#ifndef FEEDLINE_TOOLS_REPORT_H_
#define FEEDLINE_TOOLS_REPORT_H_

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "feedline/stats.h"

namespace feedline::cli {

struct Diagnosis;

// What the run was asked to do.
struct BenchSettings {
  std::string source;    // SOURCE as given, or "synthetic"
  // SourceKindName (folder, file_list, shards, hdf5), or "synthetic".
  std::string source_kind;
  std::string pipeline;  // train, val, decode, read or index
  // SOURCE is a URL (http(s)://, s3://), read with the node's shard cache
  // (--cache-dir) or record by record.
  bool remote = false;
  bool cached = false;
  int64_t batch_size = 64;
  int workers = 0;
  int prefetch = 2;
  int64_t epochs = 1;
  double step_ms = 0;  // simulated training step per batch
  // >= 0: the step becomes this many ms after half of the batches (a
  // training whose step time changes, for the tuner's benchmark).
  double step_change_ms = -1;
  uint64_t seed = 0;
  std::string error_policy = "skip";
  int cores = 1;  // CPUs available to the process
};

// What the run measured.
struct BenchResult {
  BenchSettings settings;
  StatsSnapshot stats;  // the loader's, taken after the last batch
  int64_t images = 0;   // delivered to the consumer
  int64_t batches = 0;
  double wall_s = 0;  // from the first Next() to the end of the last step
  double peak_rss_mib = 0;
  // When each batch was delivered, in seconds from the first Next(): lets
  // `tune` measure the steady state apart from the warm-up.
  std::vector<double> delivered_s;
  std::vector<double> wait_s;  // each batch's time in Next()
  int64_t change_batch = -1;   // with step_change_ms: the first batch of the new step
};

// Share of the time from the delivery of batch `from` to the end that the
// loop spent waiting for later batches; -1 when there is no such batch.
double WaitFractionFrom(const BenchResult& result, int64_t from);
// The first batch delivered at least `seconds` after batch `from`, or -1.
int64_t BatchAfter(const BenchResult& result, int64_t from, double seconds);

// In a run that completed: substitutes that failed too under error policy
// replace, and the dataset's samples that failed (the loader counts the two
// apart: StatsSnapshot::failed_substitutes and errors).
int64_t FailedSubstitutes(const StatsSnapshot& stats);
int64_t BrokenSamples(const StatsSnapshot& stats);
// "decode: 2, io: 1": the errors by reason.
std::string FailureReasons(const StatsSnapshot& stats);

double ImagesPerSecond(const BenchResult& result);
// Time from the first request to the first batch (the loader's measure, else
// unknown: -1).
double FirstBatchSeconds(const BenchResult& result);
// Share of the run the consumer spent waiting for batches.
double WaitFraction(const BenchResult& result);
// Worker time: the workers' busy time, or the sum of the stages when the
// loader reported none.
double WorkerSeconds(const BenchResult& result);
// Share of the workers' capacity (workers x elapsed) spent busy; -1 when
// there are no worker threads (workers = 0) or nothing ran.
double WorkerUtilization(const BenchResult& result);

// Each stage's share of worker time; the last entry is the rest ("other":
// time in the engine outside the dataset's stage timers).
constexpr int kNumShares = kNumStages + 1;
std::array<double, kNumShares> StageShares(const BenchResult& result);
// "read", "decode", "transform", "collate", "other".
const char* ShareName(int share);

// The text report, several lines ending in a newline.
std::string FormatReport(const BenchResult& result, const Diagnosis& diagnosis);

// What the loader's tuner chose and when, for --json.
nlohmann::json TunerJson(const TunerStats& tuner);

// The JSON object: images_per_s, first_batch_s, wait_fraction, peak_rss_mib,
// stages (seconds), errors (count by reason), workers, prefetch, batch, the
// rest of the settings and the diagnosis, and the tuner's choices when
// workers or prefetch were "auto".
nlohmann::json ReportJson(const BenchResult& result, const Diagnosis& diagnosis);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_REPORT_H_
