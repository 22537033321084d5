#include "feedline/loop_report.h"

#include <algorithm>

#include "feedline/sample_context.h"
#include "feedline/string_printf.h"

namespace feedline {
namespace {

constexpr double kNsPerSecond = 1e9;
// Workers busy less than this share of the time are not what limits the
// loader (the hand-off is); more than kBusyWorkers, they are.
constexpr double kIdleWorkers = 0.60;
constexpr double kBusyWorkers = 0.90;
// A step-bound loop whose workers are busy less than this could use fewer.
constexpr double kSpareWorkers = 0.50;
// A stage is worth naming when it takes at least this share of worker time.
constexpr double kNamedStage = 0.20;

std::string Percent(double fraction) { return StringPrintf("%.0f%%", 100 * fraction); }

std::string Milliseconds(double seconds) { return StringPrintf("%.1f ms", 1e3 * seconds); }

int64_t BusyNs(const StatsSnapshot& s) {
  int64_t busy = 0;
  for (const WorkerStats& w : s.workers) busy += w.busy_ns;
  return busy;
}

// "the 4 workers were busy", "the worker was busy".
std::string WorkersWereBusy(int workers) {
  return workers == 1 ? "the worker was busy" : "the " + std::to_string(workers) + " workers were busy";
}

}  // namespace

const char* LoopBoundName(LoopBound bound) {
  switch (bound) {
    case LoopBound::kLoader:
      return "loader-bound";
    case LoopBound::kStep:
      return "step-bound";
    case LoopBound::kUnknown:
      break;
  }
  return "unknown";
}

LoopReport Summarize(const StatsSnapshot& now, const StatsSnapshot& since, int num_workers) {
  LoopReport r;
  r.steps = now.steps - since.steps;
  r.batches = now.batches - since.batches;
  r.samples = now.delivered_samples - since.delivered_samples;
  r.seconds = static_cast<double>(now.elapsed_ns - since.elapsed_ns) / kNsPerSecond;
  const double step_total = static_cast<double>(now.step_ns - since.step_ns) / kNsPerSecond;
  double wait_total =
      static_cast<double>(now.consumer_wait_ns - since.consumer_wait_ns) / kNsPerSecond;
  if (since.batches == 0 && now.first_batch_ns >= 0) {
    r.start_wait_s = std::min(wait_total, static_cast<double>(now.first_batch_ns) / kNsPerSecond);
    wait_total -= r.start_wait_s;
  }
  if (r.steps > 0) r.step_s = step_total / static_cast<double>(r.steps);
  if (r.batches > 0) r.wait_s = wait_total / static_cast<double>(r.batches);
  if (step_total + wait_total > 0) r.wait_share = wait_total / (step_total + wait_total);
  if (r.seconds > 0) r.samples_per_s = static_cast<double>(r.samples) / r.seconds;

  // "auto" (negative): as many as the snapshot has.
  r.workers = num_workers >= 0 ? num_workers : static_cast<int>(now.workers.size());
  const double busy = static_cast<double>(BusyNs(now) - BusyNs(since));
  if (r.workers > 0 && r.seconds > 0) {
    r.worker_busy = std::clamp(busy / kNsPerSecond / (r.workers * r.seconds), 0.0, 1.0);
  }
  // Stage shares of worker time; the stages the dataset did not time (its own
  // code, the engine) are not a stage and never named.
  double staged = 0;
  for (int i = 0; i < kNumStages; ++i) {
    const auto k = static_cast<size_t>(i);
    const double ns = static_cast<double>(now.stage_ns[k] - since.stage_ns[k]);
    staged += ns;
    if (ns > 0 && (r.top_stage.empty() || ns > r.top_stage_share)) {
      r.top_stage = StageName(static_cast<Stage>(i));
      r.top_stage_share = ns;  // nanoseconds until divided below
    }
  }
  if (!r.top_stage.empty()) r.top_stage_share /= std::max(busy, staged);

  if (r.steps > 0) r.bound = r.wait_share > kLoaderBoundWait ? LoopBound::kLoader : LoopBound::kStep;
  r.verdict = FormatVerdict(r);
  return r;
}

std::string FormatVerdict(const LoopReport& r) {
  if (r.bound == LoopBound::kUnknown) {
    return "unknown: no training step measured yet (a step ends when the loop asks for the next "
           "batch)";
  }
  std::string text = std::string(LoopBoundName(r.bound)) + ": the loop waited " +
                     Percent(r.wait_share) + " of the time";
  if (r.start_wait_s > 0) {
    text += " (after the first batch, which took " + Milliseconds(r.start_wait_s) + ")";
  }
  if (!r.top_stage.empty() && r.top_stage_share >= kNamedStage) {
    text += "; " + r.top_stage + " is " + Percent(r.top_stage_share) + " of worker time";
  }
  if (r.bound == LoopBound::kLoader) {
    if (r.workers == 0) {
      return text + "; samples load in the training thread (num_workers = 0): worker threads "
                    "would load them while the step runs";
    }
    if (r.worker_busy >= kBusyWorkers) {
      return text + "; " + WorkersWereBusy(r.workers) + " " + Percent(r.worker_busy) +
             " of the time: more workers (up to one per core) or cheaper samples would help";
    }
    if (r.worker_busy >= 0 && r.worker_busy < kIdleWorkers) {
      return text + "; " + WorkersWereBusy(r.workers) + " only " + Percent(r.worker_busy) +
             " of the time: more workers will not help, a larger prefetch_factor may";
    }
    if (r.worker_busy >= 0) {
      text += "; " + WorkersWereBusy(r.workers) + " " + Percent(r.worker_busy) + " of the time";
    }
    return text;
  }
  if (r.workers > 1 && r.worker_busy >= 0 && r.worker_busy < kSpareWorkers) {
    return text + "; " + WorkersWereBusy(r.workers) + " " + Percent(r.worker_busy) +
           " of the time: fewer would keep up and leave CPU to the step";
  }
  return text + "; nothing to change in the loader";
}

std::string FormatReportLine(const LoopReport& r) {
  std::string line;
  if (r.epoch >= 0) {
    line = "epoch " + std::to_string(r.epoch);
    if (r.batch >= 0) {
      line += ": batch " + std::to_string(r.batch);
      if (r.batches_per_epoch >= 0) {
        line += '/';
        line += std::to_string(r.batches_per_epoch);
      }
    }
    if (r.end_of_epoch) line += " (end)";
    line += ", ";
  }
  line += StringPrintf("%.0f samples/s, step ", r.samples_per_s) + Milliseconds(r.step_s) +
          ", data wait " + Milliseconds(r.wait_s) + " (" + Percent(r.wait_share) + "); " +
          FormatVerdict(r);
  return line;
}

}  // namespace feedline
