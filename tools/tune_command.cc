#include "tools/tune_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "feedline/error.h"
#include "feedline/loader_options.h"
#include "feedline/stats.h"
#include "feedline/tuning.h"
#include "tools/bench_run.h"
#include "tools/load_shape.h"
#include "feedline/string_printf.h"
#include "tools/report.h"
#include "tools/rss.h"
#include "tools/source.h"
#include "tools/svg_plot.h"

namespace feedline::cli {
namespace {

struct TuneArgs {
  SourceArgs input;            // SOURCE, --fields, --max-file-bytes, --max-pixels
  LoadShape shape;             // --pipeline, --batch, --size, --seed, --step-ms
  long long max_batches = 24;  // measured per setting, after its warm-up
  int max_workers = 0;  // 0: 2 x cores
  std::vector<int> prefetch = {1, 2, 4};
  std::string plot;
  bool json = false;
  bool quiet = false;
  bool online = true;  // also run the online tuner ("auto")
};

// The online tuner's run: its final setting and its path.
struct OnlineRun {
  bool ran = false;
  int start_workers = 0;
  int workers = 0;
  int slots = 0;
  double images_per_s = 0;  // over the second half of the run
  double wait_fraction = 0;
  double peak_rss_mib = 0;
  std::vector<TunerDecision> path;
};

std::string FormatTable(const TuneArgs& args, const BenchSettings& base,
                        const std::vector<TuneRow>& rows, int recommended,
                        const OnlineRun& online) {
  std::string out = "feedline tune: " + args.input.source + " (" + args.shape.pipeline +
                    "), batch " + std::to_string(args.shape.batch) + ", " +
                    std::to_string(args.max_batches) +
                    " batches measured per setting after its warm-up, " +
                    std::to_string(base.cores) + " cores\n";
  out += StringPrintf("%8s %9s %11s %7s %12s %18s\n", "workers", "prefetch", "images/s", "wait",
                "peak RSS", "warm-up");
  for (size_t i = 0; i < rows.size(); ++i) {
    const TuneRow& r = rows[i];
    out += StringPrintf("%8d %9d %11.1f %6.1f%% %8.1f MiB %6.3f s %5.0f/s%s\n", r.workers, r.prefetch,
                  r.images_per_s, 100 * r.wait_fraction, r.peak_rss_mib, r.warmup_s,
                  r.warmup_images_per_s,
                  static_cast<int>(i) == recommended ? "  <- recommended" : "");
  }
  out += "images/s: steady state, after the warm-up batches (every slot created and filled "
         "once); warm-up: their time and rate\n";
  if (recommended >= 0) {
    const TuneRow& r = rows[static_cast<size_t>(recommended)];
    double best = 0;
    for (const TuneRow& row : rows) best = std::max(best, row.images_per_s);
    out += StringPrintf(
        "recommended: --workers %d --prefetch %d (%.1f images/s; the best measured is %.1f)\n",
        r.workers, r.prefetch, r.images_per_s, best);
  }
  if (online.ran) {
    out += StringPrintf("online tuner (--workers auto --prefetch auto): settled at %d workers, %d slots, "
                  "%.1f images/s over the second half, wait %.1f%%, peak RSS %.1f MiB\n",
                  online.workers, online.slots, online.images_per_s, 100 * online.wait_fraction,
                  online.peak_rss_mib);
    for (const TunerDecision& d : online.path) {
      out += StringPrintf("  %6.2f s  batch %-5lld ", d.at_s, static_cast<long long>(d.batch)) +
             d.reason + "\n";
    }
  }
  return out;
}

LinePlot MakePlot(const TuneArgs& args, const std::vector<TuneRow>& rows, int recommended,
                  const OnlineRun& online) {
  LinePlot plot;
  plot.title =
      "feedline tune: " + args.shape.pipeline + ", batch " + std::to_string(args.shape.batch);
  plot.x_label = "workers";
  plot.y_label = "images/s";
  plot.integer_x = true;
  std::map<int, PlotSeries> by_prefetch;
  for (const TuneRow& r : rows) {
    PlotSeries& s = by_prefetch[r.prefetch];
    s.label = "prefetch " + std::to_string(r.prefetch);
    s.x.push_back(r.workers);
    s.y.push_back(r.images_per_s);
  }
  for (auto& [prefetch, series] : by_prefetch) plot.series.push_back(std::move(series));
  if (online.ran) {
    // The tuner's path: each decision's window, at the worker count it
    // measured with, then where it settled.
    PlotSeries path;
    path.label = "online tuner (auto)";
    int workers = online.start_workers;  // the count each window measured
    for (const TunerDecision& d : online.path) {
      if (d.samples_per_s > 0) {
        path.x.push_back(workers);
        path.y.push_back(d.samples_per_s);
      }
      workers = d.workers;
    }
    path.x.push_back(online.workers);
    path.y.push_back(online.images_per_s);
    plot.series.push_back(std::move(path));
  }
  if (recommended >= 0) {
    const TuneRow& r = rows[static_cast<size_t>(recommended)];
    plot.marker = PlotMarker{static_cast<double>(r.workers), r.images_per_s,
                             "recommended: " + std::to_string(r.workers) + " workers, prefetch " +
                                 std::to_string(r.prefetch)};
  }
  return plot;
}

int RunTuneCommand(const TuneArgs& args) {
  const ParsedSource source = ParseSource(args.input);
  std::shared_ptr<const Dataset> dataset =
      OpenSource(source, args.shape.pipeline, args.shape.image_size, args.input.limits);

  BenchSettings base;
  base.source = args.input.source;
  base.source_kind = SourceKindName(source.kind);
  base.pipeline = args.shape.pipeline;
  base.batch_size = args.shape.batch;
  // As many epochs as the batches asked for need (each run stops at its
  // batch count): a small folder still gives every setting its warm-up and
  // its measured batches.
  base.epochs = 1 << 20;
  base.step_ms = args.shape.step_ms;
  base.seed = args.shape.seed;
  base.error_policy = "skip";
  base.cores = CpuCount();
  const int max_workers = args.max_workers > 0 ? args.max_workers : 2 * base.cores;

  // Every setting reads the same samples (same seed), so one unmeasured run
  // first puts them all in the page cache and no setting pays for a cold read.
  {
    BenchSettings warmup = base;
    warmup.workers = std::min(max_workers, base.cores);
    if (!args.quiet) std::fprintf(stderr, "warming up (%d workers)\n", warmup.workers);
    int max_prefetch = 1;
    for (int p : args.prefetch) max_prefetch = std::max(max_prefetch, p);
    const int64_t most = std::max(WarmupBatches(max_workers, max_prefetch) + args.max_batches,
                                  4 * args.max_batches + 8);
    const BenchResult result = RunBench(dataset, warmup, most);
    if (result.images == 0) {
      // Every setting would measure nothing: no recommendation is better
      // than one drawn from zeros.
      std::fprintf(
          stderr,
          "feedline tune: error: no image was loaded: the %lld samples tried all failed (%s); "
          "'feedline verify %s' lists the broken files\n",
          static_cast<long long>(result.stats.errors), FailureReasons(result.stats).c_str(),
          args.input.source.c_str());
      return kExitFailure;
    }
  }

  std::vector<TuneRow> rows;
  const std::vector<int> worker_counts = WorkerCandidates(max_workers);
  const size_t total = worker_counts.size() * args.prefetch.size();
  const double images_per_batch = static_cast<double>(args.shape.batch);
  for (int workers : worker_counts) {
    for (int prefetch : args.prefetch) {
      BenchSettings settings = base;
      settings.workers = workers;
      settings.prefetch = prefetch;
      ResetPeakRss();
      const int64_t warmup = WarmupBatches(workers, prefetch);
      const BenchResult result = RunBench(dataset, settings, warmup + args.max_batches);
      TuneRow row;
      row.workers = workers;
      row.prefetch = prefetch;
      row.images_per_s = SteadyImagesPerSecond(result.delivered_s, images_per_batch, warmup);
      row.wait_fraction = WaitFraction(result);
      row.peak_rss_mib = result.peak_rss_mib;
      if (static_cast<int64_t>(result.delivered_s.size()) >= warmup) {
        row.warmup_s = result.delivered_s[static_cast<size_t>(warmup - 1)];
        row.warmup_images_per_s =
            row.warmup_s > 0 ? static_cast<double>(warmup) * images_per_batch / row.warmup_s : 0;
      }
      rows.push_back(row);
      if (!args.quiet) {
        std::fprintf(stderr, "[%zu/%zu] workers %d, prefetch %d: %.1f images/s\n", rows.size(),
                     total, workers, prefetch, row.images_per_s);
      }
    }
  }

  // The loader's own tuner on the same data, long enough for several of its
  // windows; measured over the second half, once it had time to settle.
  OnlineRun online;
  if (args.online) {
    BenchSettings settings = base;
    settings.workers = kAuto;
    settings.prefetch = kAuto;
    ResetPeakRss();
    if (!args.quiet) std::fprintf(stderr, "online tuner (auto)\n");
    const BenchResult result = RunBench(dataset, settings, 4 * args.max_batches + 8);
    const int64_t n = static_cast<int64_t>(result.delivered_s.size());
    online.ran = true;
    online.start_workers = result.stats.tuner.start_workers;
    online.workers = result.stats.tuner.workers;
    online.slots = result.stats.tuner.slots;
    online.images_per_s = SteadyImagesPerSecond(result.delivered_s, images_per_batch, n / 2);
    online.wait_fraction = WaitFraction(result);
    online.peak_rss_mib = result.peak_rss_mib;
    online.path = result.stats.tuner.log;
  }

  const int recommended = PickRecommended(rows);
  std::cout << FormatTable(args, base, rows, recommended, online);
  if (!args.plot.empty()) {
    std::ofstream out(args.plot);
    out << RenderSvg(MakePlot(args, rows, recommended, online));
    out.close();
    if (!out) throw Error("cannot write the plot to '" + args.plot + "'");
    std::cout << "plot: " << args.plot << "\n";
  }
  if (args.json) {
    nlohmann::json json = {{"command", "tune"},
                           {"source", args.input.source},
                           {"source_kind", base.source_kind},
                           {"pipeline", args.shape.pipeline},
                           {"batch", args.shape.batch},
                           {"max_batches", args.max_batches},
                           {"step_ms", args.shape.step_ms},
                           {"cores", base.cores},
                           {"results", nlohmann::json::array()}};
    for (const TuneRow& r : rows) {
      json["results"].push_back({{"workers", r.workers},
                                 {"prefetch", r.prefetch},
                                 {"images_per_s", r.images_per_s},
                                 {"wait_fraction", r.wait_fraction},
                                 {"peak_rss_mib", r.peak_rss_mib},
                                 {"warmup_s", r.warmup_s},
                                 {"warmup_images_per_s", r.warmup_images_per_s}});
    }
    json["recommended"] = recommended < 0
                              ? nlohmann::json(nullptr)
                              : nlohmann::json({{"workers", rows[recommended].workers},
                                                {"prefetch", rows[recommended].prefetch},
                                                {"images_per_s", rows[recommended].images_per_s}});
    if (online.ran) {
      nlohmann::json path = nlohmann::json::array();
      for (const TunerDecision& d : online.path) {
        path.push_back({{"at_s", d.at_s},
                        {"batch", d.batch},
                        {"workers", d.workers},
                        {"slots", d.slots},
                        {"samples_per_s", d.samples_per_s},
                        {"reason", d.reason}});
      }
      json["online"] = {{"workers", online.workers},
                        {"slots", online.slots},
                        {"images_per_s", online.images_per_s},
                        {"wait_fraction", online.wait_fraction},
                        {"peak_rss_mib", online.peak_rss_mib},
                        {"path", path}};
    }
    std::cout << json.dump() << "\n";
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

std::vector<int> WorkerCandidates(int max_workers) {
  std::vector<int> counts;
  // 1, 2, 3, 4, then alternately x1.5 and x4/3: 6, 8, 12, 16, 24, 32, ...
  for (int w = 1; w <= max_workers;
       w = w < 4 ? w + 1 : ((w & (w - 1)) == 0 ? w / 2 * 3 : w / 3 * 4)) {
    counts.push_back(w);
  }
  if (max_workers >= 1 && counts.back() != max_workers) counts.push_back(max_workers);
  return counts;
}

int64_t WarmupBatches(int workers, int prefetch) {
  return std::max<int64_t>(2, int64_t{workers} * prefetch) + 1;
}

double SteadyImagesPerSecond(const std::vector<double>& delivered_s, double images_per_batch,
                             int64_t warmup) {
  const int64_t n = static_cast<int64_t>(delivered_s.size());
  if (warmup < 1 || n <= warmup) return 0;
  const double seconds = delivered_s.back() - delivered_s[static_cast<size_t>(warmup - 1)];
  if (seconds <= 0) return 0;
  return static_cast<double>(n - warmup) * images_per_batch / seconds;
}

int PickRecommended(const std::vector<TuneRow>& rows) {
  // Per worker count: the smallest prefetch no larger one beats by kTunerMinGain
  // (the tuner keeps a slot only when it helps), least memory on ties.
  std::map<int, int> pick_by_workers;  // workers -> row
  std::map<int, double> best_by_workers;
  for (const TuneRow& r : rows) {
    best_by_workers[r.workers] = std::max(best_by_workers[r.workers], r.images_per_s);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const TuneRow& r = rows[i];
    if (r.images_per_s * (1 + kTunerMinGain) < best_by_workers[r.workers]) continue;
    auto it = pick_by_workers.find(r.workers);
    if (it == pick_by_workers.end()) {
      pick_by_workers[r.workers] = static_cast<int>(i);
      continue;
    }
    const TuneRow& p = rows[static_cast<size_t>(it->second)];
    if (std::tie(r.prefetch, r.peak_rss_mib) < std::tie(p.prefetch, p.peak_rss_mib)) {
      it->second = static_cast<int>(i);
    }
  }
  // Then workers, as the tuner adds them: while a step up raises throughput
  // by kTunerMinGain.
  int pick = -1;
  for (const auto& [workers, index] : pick_by_workers) {
    if (pick >= 0 && rows[static_cast<size_t>(index)].images_per_s <
                         rows[static_cast<size_t>(pick)].images_per_s * (1 + kTunerMinGain)) {
      break;
    }
    pick = index;
  }
  return pick;
}

Command AddTuneCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("tune",
                                        "Sweep num_workers (1 to 2 x cores) and prefetch (1, 2, 4) "
                                        "on SOURCE in steady state, run the online tuner, and "
                                        "recommend a setting.");
  auto args = std::make_shared<TuneArgs>();
  AddSourceOptions(app, args->input);
  AddLoadShapeOptions(app, args->shape);
  app->add_option("--max-batches", args->max_batches,
                  "Batches measured per setting after its warm-up (bounds the run time)")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->capture_default_str();
  app->add_option("--max-workers", args->max_workers,
                  "Largest worker count tried (default: 2 x cores)")
      ->check(IntAtLeast(1))
      ->type_name("N");
  app->add_option("--prefetch", args->prefetch, "Prefetch values tried")
      ->check(IntAtLeast(1))
      ->type_name("N,...")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--plot", args->plot, "Also draw images/s against workers into this SVG file")
      ->type_name("FILE.svg");
  AddOutputFlags(app, args->json, args->quiet);
  app->add_flag("!--no-online", args->online,
                "Skip the run of the loader's online tuner (--workers auto --prefetch auto)");
  return {app, [args] { return RunTuneCommand(*args); }};
}

}  // namespace feedline::cli
