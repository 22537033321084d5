#include "src/loader/loop_monitor.h"

#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::internal {

LoopMonitor::LoopMonitor(std::function<int64_t()> clock,
                         std::function<StatsSnapshot()> engine_stats,
                         std::function<int64_t()> batches_per_epoch, int num_workers)
    : clock_(std::move(clock)),
      engine_stats_(std::move(engine_stats)),
      batches_per_epoch_(std::move(batches_per_epoch)),
      num_workers_(num_workers) {}

void LoopMonitor::SetReport(int64_t every_steps, ReportCallback callback) {
  if (every_steps < 0) {
    throw Error("report every_steps must be >= 0 (0: at the end of each epoch only), got " +
                std::to_string(every_steps));
  }
  every_steps_ = every_steps;
  callback_ = std::move(callback);
  // Mid-epoch, the windows start now; otherwise at the epoch's first call.
  if (epoch_open_) epoch_start_ = window_start_ = Stats();
  window_steps_ = 0;
}

void LoopMonitor::EndStep() {
  if (last_delivery_ns_ < 0) return;
  step_ns_.fetch_add(clock_() - last_delivery_ns_, std::memory_order_relaxed);
  steps_.fetch_add(1, std::memory_order_relaxed);
  last_delivery_ns_ = -1;
  ++window_steps_;
}

void LoopMonitor::BeforeCall() {
  EndStep();
  if (!epoch_open_) {
    epoch_open_ = true;
    if (callback_) {
      epoch_start_ = Stats();
      window_start_ = epoch_start_;
    }
    window_steps_ = 0;
    return;
  }
  if (callback_ && every_steps_ > 0 && window_steps_ >= every_steps_) {
    // The window restarts first: a callback that throws must not be called
    // again for the same steps.
    StatsSnapshot since = std::exchange(window_start_, Stats());
    window_steps_ = 0;
    Report(since, /*end_of_epoch=*/false);
  }
}

void LoopMonitor::AfterBatch(int64_t rows, int64_t epoch, int64_t batch_index) {
  last_delivery_ns_ = clock_();
  samples_.fetch_add(rows, std::memory_order_relaxed);
  epoch_ = epoch;
  batch_ = batch_index + 1;
}

void LoopMonitor::AfterEnd() {
  const bool was_open = epoch_open_;
  epoch_open_ = false;
  window_steps_ = 0;
  // An epoch that delivered nothing here (ended at once) has nothing to report.
  if (was_open && callback_ && epoch_ >= 0) Report(epoch_start_, /*end_of_epoch=*/true);
  epoch_ = -1;
  batch_ = -1;
}

void LoopMonitor::Interrupted() {
  EndStep();
  epoch_open_ = false;
  window_steps_ = 0;
  epoch_ = -1;
  batch_ = -1;
}

void LoopMonitor::Report(const StatsSnapshot& since, bool end_of_epoch) {
  LoopReport report = Summarize(Stats(), since, num_workers_);
  report.epoch = epoch_;
  report.batch = batch_;
  report.batches_per_epoch = batches_per_epoch_ ? batches_per_epoch_() : -1;
  report.end_of_epoch = end_of_epoch;
  callback_(report);
}

StatsSnapshot LoopMonitor::Stats() const {
  StatsSnapshot s = engine_stats_();
  s.steps = steps_.load(std::memory_order_relaxed);
  s.step_ns = step_ns_.load(std::memory_order_relaxed);
  s.delivered_samples = samples_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace feedline::internal
