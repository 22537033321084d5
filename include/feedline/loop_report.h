// LoopReport: where the training loop's time goes, in numbers and in plain
// words, from the loader's statistics.
//
// What users otherwise time by hand: the training step (the time from a
// batch's delivery to the loop's next request, so the data wait is not in
// it), the data wait per batch and its share of the loop's time, samples per
// second, and a verdict:
//   "loader-bound: the loop waited 41% of the time; decode is 83% of worker
//    time; the 4 workers were busy 97% of the time: more workers (up to one
//    per core) or cheaper samples would help"
//   "step-bound: the loop waited 2% of the time; ..."
// The rule: the loop is loader-bound when it waited more than
// kLoaderBoundWait (10%) of its time (wait / (wait + step)), as
// `feedline bench` decides.
//
// Summarize works on one snapshot (everything since the loader started) or
// on the difference of two (a window: the last N steps, one epoch).
// DataLoader::SetReport calls back with a report every N steps and at the end
// of each epoch; feedline.DataLoader(report_every=N) does it from Python.
//
// Thread safety: plain values and pure functions.
//
// Example:
//   LoopReport r = Summarize(loader.stats(), {}, loader.options().num_workers);
//   std::cout << FormatReportLine(r) << "\n";
#ifndef FEEDLINE_LOOP_REPORT_H_
#define FEEDLINE_LOOP_REPORT_H_

#include <cstdint>
#include <string>

#include "feedline/export.h"
#include "feedline/stats.h"

namespace feedline {

// The loop waiting more than this share of its time makes it loader-bound.
inline constexpr double kLoaderBoundWait = 0.10;

// What limits the loop: the loader (it waits for data), the training step
// (data is there before it asks), or nothing measured yet.
enum class LoopBound { kUnknown, kLoader, kStep };
// "unknown", "loader-bound", "step-bound".
FEEDLINE_EXPORT const char* LoopBoundName(LoopBound bound);

struct FEEDLINE_EXPORT LoopReport {
  // Where the window ends (set by DataLoader's reports; -1 when unknown).
  int64_t epoch = -1;
  int64_t batch = -1;              // batches delivered in that epoch so far
  int64_t batches_per_epoch = -1;  // -1 when unknown (an IterableDataset)
  bool end_of_epoch = false;       // the window is a whole epoch, just ended

  int64_t steps = 0;    // training steps measured in the window
  int64_t batches = 0;  // batches delivered in the window
  int64_t samples = 0;  // samples delivered in the window
  double seconds = 0;   // length of the window
  double step_s = 0;    // mean training step
  double wait_s = 0;    // mean data wait per batch delivered
  double wait_share = 0;  // wait / (wait + step), summed over the window
  // The wait for the run's first batch (workers starting, files opened),
  // when the window holds it: left out of wait_s, wait_share and the
  // bound, which would otherwise call a short run loader-bound for its
  // start-up alone.
  double start_wait_s = 0;
  double samples_per_s = 0;

  int workers = 0;          // worker threads (0: samples load in the loop's thread)
  double worker_busy = -1;  // share of the workers' time spent busy; -1 without workers
  std::string top_stage;    // the timed stage taking most worker time; "" if none was timed
  double top_stage_share = 0;

  LoopBound bound = LoopBound::kUnknown;
  std::string verdict;  // FormatVerdict(*this), filled by Summarize
};

// The loop between `since` (a default snapshot: since the start) and `now`.
// `num_workers` is the loader's (0: loading in the loop's thread; negative,
// "auto": the snapshot's worker count).
FEEDLINE_EXPORT LoopReport Summarize(const StatsSnapshot& now, const StatsSnapshot& since,
                                     int num_workers);

// The verdict in plain words, without a trailing period.
FEEDLINE_EXPORT std::string FormatVerdict(const LoopReport& report);

// One line, worded as `feedline bench`'s progress line:
// "epoch 2: batch 200/500, 812 samples/s, step 17.5 ms, data wait 12.3 ms (41%);
//  loader-bound: ..."
FEEDLINE_EXPORT std::string FormatReportLine(const LoopReport& report);

}  // namespace feedline

#endif  // FEEDLINE_LOOP_REPORT_H_
