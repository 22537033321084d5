#include "tools/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "feedline/string_printf.h"

namespace feedline::cli {
namespace {

// The bar is redrawn at most this often: faster is invisible and costs time.
constexpr double kBarInterval = 0.1;
constexpr int kBarWidth = 24;

double Rate(const ProgressState& state) {
  return state.elapsed_s > 0 ? static_cast<double>(state.images) / state.elapsed_s : 0;
}

std::string EpochText(const ProgressState& state) {
  return StringPrintf("epoch %lld/%lld", static_cast<long long>(state.epoch + 1),
                static_cast<long long>(state.epochs));
}

std::string BatchText(const ProgressState& state) {
  if (state.batches_per_epoch < 0) return StringPrintf("%lld", static_cast<long long>(state.batch));
  return StringPrintf("%lld/%lld", static_cast<long long>(state.batch),
                static_cast<long long>(state.batches_per_epoch));
}

std::string EtaText(const ProgressState& state) {
  const double eta = EtaSeconds(state);
  return eta < 0 ? "ETA ?" : "ETA " + FormatDuration(eta);
}

}  // namespace

double EtaSeconds(const ProgressState& state) {
  if (state.batches_per_epoch <= 0 || state.elapsed_s <= 0) return -1;
  const int64_t total = state.batches_per_epoch * state.epochs;
  const int64_t done = state.epoch * state.batches_per_epoch + state.batch;
  if (done <= 0) return -1;
  return state.elapsed_s / static_cast<double>(done) *
         static_cast<double>(std::max<int64_t>(0, total - done));
}

std::string FormatDuration(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (total < 60) return StringPrintf("%lld s", total);
  if (total < 3600) return StringPrintf("%lld:%02lld", total / 60, total % 60);
  return StringPrintf("%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
}

std::string FormatProgressBar(const ProgressState& state, int bar_width) {
  std::string bar(static_cast<size_t>(std::max(0, bar_width)), '-');
  if (state.batches_per_epoch > 0) {
    const double fraction = std::clamp(
        static_cast<double>(state.batch) / static_cast<double>(state.batches_per_epoch), 0.0, 1.0);
    const auto filled = static_cast<size_t>(std::lround(fraction * bar_width));
    std::fill(bar.begin(), bar.begin() + static_cast<std::ptrdiff_t>(filled), '#');
  }
  return EpochText(state) + " [" + bar + "] " + BatchText(state) + "  " +
         StringPrintf("%.0f images/s", Rate(state)) + "  " + EtaText(state);
}

std::string FormatProgressLine(const ProgressState& state) {
  return EpochText(state) + ": batch " + BatchText(state) + ", " +
         StringPrintf("%.0f images/s", Rate(state)) + ", " + EtaText(state) +
         (state.verdict.empty() ? "" : "; " + state.verdict);
}

ProgressReporter::Mode ProgressReporter::ModeFor(std::FILE* stream) {
  return isatty(fileno(stream)) ? Mode::kBar : Mode::kLines;
}

ProgressReporter::ProgressReporter(std::FILE* out, Mode mode, double line_interval_s)
    : out_(out), mode_(mode), interval_s_(line_interval_s) {}

ProgressReporter::~ProgressReporter() { Finish(); }

void ProgressReporter::Update(const ProgressState& state) {
  switch (mode_) {
    case Mode::kOff:
      return;
    case Mode::kBar:
      if (last_s_ >= 0 && state.elapsed_s - last_s_ < kBarInterval) return;
      // \r and "erase to end of line" redraw the bar in place.
      std::fprintf(out_, "\r%s\033[K", FormatProgressBar(state, kBarWidth).c_str());
      bar_shown_ = true;
      break;
    case Mode::kLines:
      // The first line waits a full interval too: short runs print none.
      if (state.elapsed_s - std::max(0.0, last_s_) < interval_s_) return;
      std::fprintf(out_, "%s\n", FormatProgressLine(state).c_str());
      break;
  }
  last_s_ = state.elapsed_s;
  std::fflush(out_);
}

void ProgressReporter::Finish() {
  if (bar_shown_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
    bar_shown_ = false;
  }
}

}  // namespace feedline::cli
