#include "tools/report.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "feedline/loader_options.h"
#include "tools/diagnosis.h"
#include "feedline/string_printf.h"

namespace feedline::cli {
namespace {

constexpr double kNsPerSecond = 1e9;

std::string Plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string ErrorsText(const StatsSnapshot& stats) {
  if (stats.errors == 0) return "none";
  const int64_t substitutes = FailedSubstitutes(stats);
  if (substitutes > 0) {
    // Under replace a substitute can be broken too: no further sample of
    // the epoch was lost, so it is counted apart from the broken samples.
    return Plural(BrokenSamples(stats), "broken sample", "broken samples") + " replaced, " +
           Plural(substitutes, "substitute", "substitutes") + " also failed (" +
           FailureReasons(stats) + ")";
  }
  std::string text = std::to_string(stats.errors) + " (" + FailureReasons(stats) + ")";
  if (stats.skipped > 0) text += ", " + std::to_string(stats.skipped) + " skipped";
  if (stats.replaced > 0) text += ", " + std::to_string(stats.replaced) + " replaced";
  return text;
}

double Mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// What the tuner chose and when (num_workers / prefetch "auto").
std::string TunerText(const TunerStats& t) {
  std::string out = StringPrintf("  tuner           %d of %d workers, %d slots", t.workers,
                           t.max_workers, t.slots);
  if (t.slot_bytes > 0) out += StringPrintf(" of %.1f MiB", Mib(t.slot_bytes));
  if (t.memory_budget_bytes > 0) out += StringPrintf(" (budget %.0f MiB)", Mib(t.memory_budget_bytes));
  out += ", " + Plural(t.decisions, "change", "changes") + "\n";
  if (static_cast<int64_t>(t.log.size()) < t.decisions) {
    out += StringPrintf("    (the first %lld not shown)\n",
                  static_cast<long long>(t.decisions - static_cast<int64_t>(t.log.size())));
  }
  for (const TunerDecision& d : t.log) {
    out += StringPrintf("    %7.2f s  batch %-6lld ", d.at_s, static_cast<long long>(d.batch)) + d.reason +
           "\n";
  }
  return out;
}

// Slots per active worker, rounded up: what a fixed prefetch would give.
int AutoPrefetch(const TunerStats& t) {
  const int workers = std::max(1, t.workers);
  return std::max(1, (t.slots + workers - 1) / workers);
}

}  // namespace

nlohmann::json TunerJson(const TunerStats& t) {
  nlohmann::json log = nlohmann::json::array();
  for (const TunerDecision& d : t.log) {
    log.push_back({{"at_s", d.at_s},
                   {"batch", d.batch},
                   {"workers", d.workers},
                   {"slots", d.slots},
                   {"samples_per_s", d.samples_per_s},
                   {"reason", d.reason}});
  }
  return {{"enabled", t.enabled},
          {"workers", t.workers},
          {"slots", t.slots},
          {"max_workers", t.max_workers},
          {"memory_budget_bytes", t.memory_budget_bytes},
          {"slot_bytes", t.slot_bytes},
          {"decisions", t.decisions},
          {"log", log}};
}

std::string FailureReasons(const StatsSnapshot& stats) {
  std::string text;
  for (const auto& [reason, count] : stats.errors_by_reason) {
    text += (text.empty() ? "" : ", ") + reason + ": " + std::to_string(count);
  }
  return text;
}

int64_t FailedSubstitutes(const StatsSnapshot& stats) { return stats.failed_substitutes; }

int64_t BrokenSamples(const StatsSnapshot& stats) { return stats.errors; }

double ImagesPerSecond(const BenchResult& result) {
  return result.wall_s > 0 ? static_cast<double>(result.images) / result.wall_s : 0;
}

double FirstBatchSeconds(const BenchResult& result) {
  return result.stats.first_batch_ns < 0 ? -1 : result.stats.first_batch_ns / kNsPerSecond;
}

double WaitFraction(const BenchResult& result) { return result.stats.wait_fraction(); }

double WaitFractionFrom(const BenchResult& result, int64_t from) {
  const int64_t n = static_cast<int64_t>(result.delivered_s.size());
  if (from < 0 || from + 1 >= n || result.wait_s.size() != result.delivered_s.size()) return -1;
  double wait = 0;
  for (int64_t b = from + 1; b < n; ++b) wait += result.wait_s[static_cast<size_t>(b)];
  const double span = result.wall_s - result.delivered_s[static_cast<size_t>(from)];
  return span > 0 ? std::min(1.0, wait / span) : -1;
}

int64_t BatchAfter(const BenchResult& result, int64_t from, double seconds) {
  const int64_t n = static_cast<int64_t>(result.delivered_s.size());
  if (from < 0 || from >= n) return -1;
  const double at = result.delivered_s[static_cast<size_t>(from)] + seconds;
  for (int64_t b = from; b < n; ++b) {
    if (result.delivered_s[static_cast<size_t>(b)] >= at) return b;
  }
  return -1;
}

double WorkerSeconds(const BenchResult& result) {
  int64_t busy = 0;
  for (const WorkerStats& worker : result.stats.workers) busy += worker.busy_ns;
  if (busy == 0) {
    busy = std::accumulate(result.stats.stage_ns.begin(), result.stats.stage_ns.end(), int64_t{0});
  }
  return busy / kNsPerSecond;
}

double WorkerUtilization(const BenchResult& result) {
  // With "auto" the threads started (the tuner's most), of which it used
  // some: utilization is of all of them.
  const int workers = result.settings.workers == kAuto
                          ? static_cast<int>(result.stats.workers.size())
                          : result.settings.workers;
  if (workers <= 0 || result.stats.elapsed_ns <= 0 || result.stats.workers.empty()) return -1;
  int64_t busy = 0;
  for (const WorkerStats& worker : result.stats.workers) busy += worker.busy_ns;
  const double capacity =
      static_cast<double>(workers) * static_cast<double>(result.stats.elapsed_ns);
  return std::clamp(static_cast<double>(busy) / capacity, 0.0, 1.0);
}

std::array<double, kNumShares> StageShares(const BenchResult& result) {
  std::array<double, kNumShares> shares{};
  const double total = WorkerSeconds(result);
  if (total <= 0) return shares;
  double staged = 0;
  for (int i = 0; i < kNumStages; ++i) {
    shares[i] = result.stats.stage_ns[i] / kNsPerSecond / total;
    staged += shares[i];
  }
  shares[kNumStages] = std::max(0.0, 1.0 - staged);
  return shares;
}

const char* ShareName(int share) {
  return share == kNumStages ? "other" : StageName(static_cast<Stage>(share));
}

std::string FormatReport(const BenchResult& result, const Diagnosis& diagnosis) {
  const BenchSettings& s = result.settings;
  std::ostringstream out;
  out << "feedline bench: " << s.source << " (" << s.pipeline << "), "
      << Plural(result.images, "image", "images") << " in "
      << Plural(result.batches, "batch", "batches") << " of " << s.batch_size << ", "
      << (s.workers == kAuto ? std::string("auto workers") : Plural(s.workers, "worker", "workers"))
      << ", prefetch " << (s.prefetch == kAuto ? std::string("auto") : std::to_string(s.prefetch))
      << ", "
      << Plural(s.epochs, "epoch", "epochs");
  if (s.step_ms > 0) out << ", step " << StringPrintf("%g", s.step_ms) << " ms";
  out << "\n";

  const double rate = ImagesPerSecond(result);
  out << StringPrintf("  throughput      %.1f images/s (%.2f batches/s)\n", rate,
                result.wall_s > 0 ? static_cast<double>(result.batches) / result.wall_s : 0.0);
  if (result.images > 0) out << StringPrintf("  per image       %.1f us\n", 1e6 / std::max(rate, 1e-9));
  const double first = FirstBatchSeconds(result);
  out << (first < 0 ? std::string("  first batch     -\n")
                    : StringPrintf("  first batch     %.3f s\n", first));
  out << StringPrintf("  elapsed         %.3f s\n", result.wall_s);
  out << StringPrintf("  consumer wait   %.1f%% of the run\n", 100 * WaitFraction(result));
  const double utilization = WorkerUtilization(result);
  if (utilization >= 0) {
    out << StringPrintf("  workers busy    %.1f%% of %d x %.3f s\n", 100 * utilization,
                  s.workers == kAuto ? static_cast<int>(result.stats.workers.size()) : s.workers,
                  result.stats.elapsed_ns / kNsPerSecond);
  }

  const double worker_s = WorkerSeconds(result);
  out << StringPrintf("  stages          share of %.3f s of worker time\n", worker_s);
  const std::array<double, kNumShares> shares = StageShares(result);
  for (int i = 0; i < kNumShares; ++i) {
    const double seconds =
        i < kNumStages ? result.stats.stage_ns[i] / kNsPerSecond : shares[i] * worker_s;
    out << StringPrintf("    %-12s %5.1f%%  %9.3f s\n", ShareName(i), 100 * shares[i], seconds);
  }
  out << StringPrintf("  peak RSS        %.1f MiB\n", result.peak_rss_mib);
  out << "  errors          " << ErrorsText(result.stats) << "\n";
  if (result.stats.tuner.enabled) out << TunerText(result.stats.tuner);

  out << "diagnosis: " << BottleneckName(diagnosis.bottleneck) << "-bound.";
  for (const std::string& sentence : diagnosis.sentences) out << " " << sentence;
  out << "\n";
  return out.str();
}

nlohmann::json ReportJson(const BenchResult& result, const Diagnosis& diagnosis) {
  const BenchSettings& s = result.settings;
  nlohmann::json stages = nlohmann::json::object();
  nlohmann::json shares_json = nlohmann::json::object();
  const std::array<double, kNumShares> shares = StageShares(result);
  for (int i = 0; i < kNumStages; ++i)
    stages[ShareName(i)] = result.stats.stage_ns[i] / kNsPerSecond;
  for (int i = 0; i < kNumShares; ++i) shares_json[ShareName(i)] = shares[i];
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& [reason, count] : result.stats.errors_by_reason) errors[reason] = count;
  const double first = FirstBatchSeconds(result);
  const double utilization = WorkerUtilization(result);

  nlohmann::json json = {
      {"command", "bench"},
      {"source", s.source},
      {"source_kind", s.source_kind},
      {"pipeline", s.pipeline},
      {"images", result.images},
      {"batches", result.batches},
      {"epochs", s.epochs},
      {"elapsed_s", result.wall_s},
      {"images_per_s", ImagesPerSecond(result)},
      {"first_batch_s", first < 0 ? nlohmann::json(nullptr) : nlohmann::json(first)},
      {"wait_fraction", WaitFraction(result)},
      {"worker_utilization",
       utilization < 0 ? nlohmann::json(nullptr) : nlohmann::json(utilization)},
      {"worker_s", WorkerSeconds(result)},
      {"peak_rss_mib", result.peak_rss_mib},
      {"stages", stages},
      {"stage_shares", shares_json},
      {"errors", errors},
      {"errors_total", result.stats.errors + result.stats.failed_substitutes},
      {"skipped", result.stats.skipped},
      {"replaced", result.stats.replaced},
      {"broken_samples", BrokenSamples(result.stats)},
      {"failed_substitutes", FailedSubstitutes(result.stats)},
      // With "auto": where the tuner ended (its path is under "tuner").
      {"workers", s.workers == kAuto ? result.stats.tuner.workers : s.workers},
      {"prefetch", s.prefetch == kAuto ? AutoPrefetch(result.stats.tuner) : s.prefetch},
      {"workers_auto", s.workers == kAuto},
      {"prefetch_auto", s.prefetch == kAuto},
      {"batch", s.batch_size},
      {"step_ms", s.step_ms},
      {"step_change_ms", s.step_change_ms},
      {"seed", s.seed},
      {"error_policy", s.error_policy},
      {"cores", s.cores},
      {"diagnosis",
       {{"bottleneck", BottleneckName(diagnosis.bottleneck)},
        {"dominant_stage", diagnosis.dominant_stage},
        {"dominant_share", diagnosis.dominant_share},
        {"suggested_workers", diagnosis.suggested_workers},
        {"suggested_prefetch", diagnosis.suggested_prefetch},
        {"text", diagnosis.sentences}}},
  };
  if (result.stats.tuner.enabled) json["tuner"] = TunerJson(result.stats.tuner);
  // After the first fifth of the batches: the rate "auto" reached once it had
  // a fifth of the run to find its setting.
  const int64_t n = static_cast<int64_t>(result.delivered_s.size());
  if (n >= 5) {
    const int64_t fifth = n / 5;
    const double span = result.delivered_s.back() - result.delivered_s[static_cast<size_t>(fifth - 1)];
    json["images_per_s_after_first_fifth"] =
        span > 0 ? static_cast<double>(n - fifth) * static_cast<double>(s.batch_size) / span : 0.0;
  }
  if (result.change_batch >= 0) {
    const int64_t settled = BatchAfter(result, result.change_batch, 3.0);
    double waited = 0;  // before the change
    for (int64_t b = 0; b <= result.change_batch; ++b) waited += result.wait_s[static_cast<size_t>(b)];
    const double at = result.delivered_s[static_cast<size_t>(result.change_batch)];
    json["step_change"] = {
        {"to_ms", s.step_change_ms},
        {"at_s", at},
        {"wait_fraction_before", at > 0 ? waited / at : 0.0},
        {"wait_fraction_after", WaitFractionFrom(result, result.change_batch)},
        {"wait_fraction_after_3s", settled < 0 ? nlohmann::json(nullptr)
                                               : nlohmann::json(WaitFractionFrom(result, settled))}};
  }
  return json;
}

}  // namespace feedline::cli
