// Diagnosis of a benchmark run in plain words: is the loader or the training
// step the bottleneck, which stage dominates, and what to change.
//
// Thread safety: pure functions.
#ifndef FEEDLINE_TOOLS_DIAGNOSIS_H_
#define FEEDLINE_TOOLS_DIAGNOSIS_H_

#include <string>
#include <vector>

#include "feedline/loop_report.h"

namespace feedline::cli {

struct BenchResult;

enum class Bottleneck { kLoader, kCompute };
// "loader" or "compute".
const char* BottleneckName(Bottleneck bottleneck);

// The consumer waiting more than this share of the run makes it loader-bound:
// the rule every training loop's report uses (loop_report.h).
inline constexpr double kLoaderBoundWait = feedline::kLoaderBoundWait;
// Workers busy less than this share of the time are not what limits the loader.
inline constexpr double kIdleWorkers = 0.60;

struct Diagnosis {
  Bottleneck bottleneck = Bottleneck::kLoader;
  std::string dominant_stage;  // a ShareName; empty if no time was recorded
  double dominant_share = 0;
  int suggested_workers = 0;           // 0: keep --workers
  int suggested_prefetch = 0;          // 0: keep --prefetch
  std::vector<std::string> sentences;  // the diagnosis, in reading order
};

Diagnosis Diagnose(const BenchResult& result);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_DIAGNOSIS_H_
