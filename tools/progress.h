// Progress of a running benchmark on stderr: a bar redrawn in place when the
// stream is a terminal, otherwise a plain line every few seconds (so logs of
// batch jobs stay readable).
//
// Thread safety: a ProgressReporter is used by one thread; the Format
// functions are pure.
#ifndef FEEDLINE_TOOLS_PROGRESS_H_
#define FEEDLINE_TOOLS_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

namespace feedline::cli {

struct ProgressState {
  int64_t epoch = 0;  // 0-based epoch running
  int64_t epochs = 1;
  int64_t batch = 0;               // batches done in this epoch
  int64_t batches_per_epoch = -1;  // -1 when unknown
  int64_t images = 0;              // images delivered since the start
  double elapsed_s = 0;            // since the start
  std::string verdict;             // the loader's (loop_report.h); "" when not known
};

// Seconds left at the current rate, or -1 when it cannot be told yet.
double EtaSeconds(const ProgressState& state);

// "42 s", "3:05", "1:02:03".
std::string FormatDuration(double seconds);

// "epoch 1/3 [########--------] 12/40  812 images/s  ETA 0:12", with a bar
// of `bar_width` cells.
std::string FormatProgressBar(const ProgressState& state, int bar_width);

// "epoch 1/3: batch 12/40, 812 images/s, ETA 12 s", then "; " and the
// verdict when there is one ("loader-bound: the loop waited 41% of the time;
// ..."). The bar leaves the verdict out: it must fit one terminal line.
std::string FormatProgressLine(const ProgressState& state);

class ProgressReporter {
 public:
  enum class Mode { kBar, kLines, kOff };

  // kBar when `stream` is a terminal, kLines otherwise.
  static Mode ModeFor(std::FILE* stream);

  // Writes to `out` (not owned). In kLines mode a line is written at most
  // every `line_interval_s` seconds of ProgressState::elapsed_s.
  ProgressReporter(std::FILE* out, Mode mode, double line_interval_s = 5.0);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Shows `state` if enough time has passed since the last update.
  void Update(const ProgressState& state);

  // Erases the bar (kBar), so that the report starts on a clean line.
  void Finish();

 private:
  std::FILE* out_;
  Mode mode_;
  double interval_s_;
  double last_s_ = -1;
  bool bar_shown_ = false;
};

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_PROGRESS_H_
