// LoopMonitor: the training loop as the loader's consumer calls show it.
//
// A training step is the time from a batch's delivery to the loop's next
// call (Next, TryNext, Reset...): what the loop did with the batch, the data
// wait excluded. The monitor counts steps, their time and the samples
// delivered, adds them to the engine's statistics, and calls the report
// callback every N steps and at the end of each epoch with a LoopReport of
// that window (windows never span epochs, so the time between epochs,
// evaluation say, is in none).
//
// The clock and the engine's statistics are functions, so tests drive both.
//
// Thread safety: the Before*/After*/Interrupted/SetReport calls come from
// the consumer thread (the one iterating the loader); Stats() may be called
// from any thread (the loop's counters are atomics).
#ifndef FEEDLINE_SRC_LOADER_LOOP_MONITOR_H_
#define FEEDLINE_SRC_LOADER_LOOP_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "feedline/loop_report.h"
#include "feedline/stats.h"

namespace feedline::internal {

using ReportCallback = std::function<void(const LoopReport&)>;

class LoopMonitor {
 public:
  // `clock` gives nanoseconds (any origin); `engine_stats` the engine's
  // snapshot; `batches_per_epoch` the loader's size (-1 if unknown), asked
  // only for a report; `num_workers` the loader's.
  LoopMonitor(std::function<int64_t()> clock, std::function<StatsSnapshot()> engine_stats,
              std::function<int64_t()> batches_per_epoch, int num_workers);

  // Calls `callback` every `every_steps` steps (0: only at the end of each
  // epoch); a null callback stops the reports. Throws Error if every_steps < 0.
  void SetReport(int64_t every_steps, ReportCallback callback);

  // A call for the next batch starts: ends the step on the last delivered
  // batch, and reports if one is due (before the loader is asked, so an
  // exception from the callback loses no batch).
  void BeforeCall();
  // The call delivered a batch of `rows` samples, batch `batch_index` of `epoch`.
  void AfterBatch(int64_t rows, int64_t epoch, int64_t batch_index);
  // The call found the end of the epoch: reports the epoch's window.
  void AfterEnd();
  // The loop abandoned or repositioned the epoch (Reset, Restore, a new
  // iteration): the step on the last batch ends here, the epoch's window is
  // dropped without a report.
  void Interrupted();

  // The engine's statistics with the loop's counters filled in.
  StatsSnapshot Stats() const;

 private:
  void EndStep();
  void Report(const StatsSnapshot& since, bool end_of_epoch);

  std::function<int64_t()> clock_;
  std::function<StatsSnapshot()> engine_stats_;
  std::function<int64_t()> batches_per_epoch_;
  int num_workers_;

  // Consumer thread only.
  int64_t last_delivery_ns_ = -1;  // -1: no step running
  bool epoch_open_ = false;
  StatsSnapshot epoch_start_;
  StatsSnapshot window_start_;
  int64_t window_steps_ = 0;
  int64_t epoch_ = -1;
  int64_t batch_ = -1;  // batches of epoch_ delivered (counting those before a Restore)
  int64_t every_steps_ = 0;
  ReportCallback callback_;

  std::atomic<int64_t> steps_{0};
  std::atomic<int64_t> step_ns_{0};
  std::atomic<int64_t> samples_{0};
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_LOOP_MONITOR_H_
