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
#include "tools/bench_run.h"
#include "tools/report.h"
#include "tools/rss.h"
#include "tools/source.h"
#include "tools/svg_plot.h"

namespace feedline::cli {
namespace {

struct TuneArgs {
  std::string source;
  std::string pipeline = "train";
  long long batch = 64;
  long long max_batches = 8;
  int max_workers = 0;  // 0: 2 x cores
  std::vector<int> prefetch = {1, 2, 4};
  double step_ms = 0;
  unsigned long long seed = 0;
  int image_size = 224;
  std::string plot;
  bool json = false;
  bool quiet = false;
  SourceLimits limits;
};

std::string Printf(const char* format, auto... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), format, args...);
  return buffer;
}

// Throughput after the first batch, so that thread start-up and the first
// batch's latency (reported separately by bench) do not weigh on a short run.
double SteadyImagesPerSecond(const BenchResult& result) {
  const double first = FirstBatchSeconds(result);
  if (result.batches < 2 || first < 0 || result.wall_s <= first) return ImagesPerSecond(result);
  const double first_images =
      static_cast<double>(result.images) / static_cast<double>(result.batches);
  return (static_cast<double>(result.images) - first_images) / (result.wall_s - first);
}

std::string FormatTable(const TuneArgs& args, const BenchSettings& base,
                        const std::vector<TuneRow>& rows, int recommended) {
  std::string out = "feedline tune: " + args.source + " (" + args.pipeline + "), batch " +
                    std::to_string(args.batch) + ", up to " + std::to_string(args.max_batches) +
                    " batches per setting, " + std::to_string(base.cores) + " cores\n";
  out += Printf("%8s %9s %11s %7s %12s\n", "workers", "prefetch", "images/s", "wait", "peak RSS");
  for (size_t i = 0; i < rows.size(); ++i) {
    const TuneRow& r = rows[i];
    out += Printf("%8d %9d %11.1f %6.1f%% %8.1f MiB%s\n", r.workers, r.prefetch, r.images_per_s,
                  100 * r.wait_fraction, r.peak_rss_mib,
                  static_cast<int>(i) == recommended ? "  <- recommended" : "");
  }
  if (recommended >= 0) {
    const TuneRow& r = rows[static_cast<size_t>(recommended)];
    double best = 0;
    for (const TuneRow& row : rows) best = std::max(best, row.images_per_s);
    out += Printf(
        "recommended: --workers %d --prefetch %d (%.1f images/s; the best measured is %.1f)\n",
        r.workers, r.prefetch, r.images_per_s, best);
  }
  return out;
}

LinePlot MakePlot(const TuneArgs& args, const std::vector<TuneRow>& rows, int recommended) {
  LinePlot plot;
  plot.title = "feedline tune: " + args.pipeline + ", batch " + std::to_string(args.batch);
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
  if (recommended >= 0) {
    const TuneRow& r = rows[static_cast<size_t>(recommended)];
    plot.marker = PlotMarker{static_cast<double>(r.workers), r.images_per_s,
                             "recommended: " + std::to_string(r.workers) + " workers, prefetch " +
                                 std::to_string(r.prefetch)};
  }
  return plot;
}

int RunTuneCommand(const TuneArgs& args) {
  if (args.source.empty()) throw UsageError("SOURCE is required: an image folder or a file list");
  std::shared_ptr<const Dataset> dataset =
      OpenImageSource(args.source, args.pipeline, args.image_size, args.limits);

  BenchSettings base;
  base.source = args.source;
  base.pipeline = args.pipeline;
  base.batch_size = args.batch;
  base.epochs = 1;
  base.step_ms = args.step_ms;
  base.seed = args.seed;
  base.error_policy = "skip";
  base.cores = CpuCount();
  const int max_workers = args.max_workers > 0 ? args.max_workers : 2 * base.cores;

  // Every setting reads the same samples (same seed), so one unmeasured run
  // first puts them all in the page cache and no setting pays for a cold read.
  {
    BenchSettings warmup = base;
    warmup.workers = std::min(max_workers, base.cores);
    if (!args.quiet) std::fprintf(stderr, "warming up (%d workers)\n", warmup.workers);
    const BenchResult result = RunBench(dataset, warmup, args.max_batches);
    if (result.images == 0) {
      // Every setting would measure nothing: no recommendation is better
      // than one drawn from zeros.
      std::fprintf(
          stderr,
          "feedline tune: error: no image was loaded: the %lld samples tried all failed (%s); "
          "'feedline verify %s' lists the broken files\n",
          static_cast<long long>(result.stats.errors), FailureReasons(result.stats).c_str(),
          args.source.c_str());
      return kExitFailure;
    }
  }

  std::vector<TuneRow> rows;
  const std::vector<int> worker_counts = WorkerCandidates(max_workers);
  const size_t total = worker_counts.size() * args.prefetch.size();
  for (int workers : worker_counts) {
    for (int prefetch : args.prefetch) {
      BenchSettings settings = base;
      settings.workers = workers;
      settings.prefetch = prefetch;
      ResetPeakRss();
      const BenchResult result = RunBench(dataset, settings, args.max_batches);
      TuneRow row{workers, prefetch, SteadyImagesPerSecond(result), WaitFraction(result),
                  result.peak_rss_mib};
      rows.push_back(row);
      if (!args.quiet) {
        std::fprintf(stderr, "[%zu/%zu] workers %d, prefetch %d: %.1f images/s\n", rows.size(),
                     total, workers, prefetch, row.images_per_s);
      }
    }
  }

  const int recommended = PickRecommended(rows);
  std::cout << FormatTable(args, base, rows, recommended);
  if (!args.plot.empty()) {
    std::ofstream out(args.plot);
    out << RenderSvg(MakePlot(args, rows, recommended));
    out.close();
    if (!out) throw Error("cannot write the plot to '" + args.plot + "'");
    std::cout << "plot: " << args.plot << "\n";
  }
  if (args.json) {
    nlohmann::json json = {{"command", "tune"},
                           {"source", args.source},
                           {"pipeline", args.pipeline},
                           {"batch", args.batch},
                           {"max_batches", args.max_batches},
                           {"step_ms", args.step_ms},
                           {"cores", base.cores},
                           {"results", nlohmann::json::array()}};
    for (const TuneRow& r : rows) {
      json["results"].push_back({{"workers", r.workers},
                                 {"prefetch", r.prefetch},
                                 {"images_per_s", r.images_per_s},
                                 {"wait_fraction", r.wait_fraction},
                                 {"peak_rss_mib", r.peak_rss_mib}});
    }
    json["recommended"] = recommended < 0
                              ? nlohmann::json(nullptr)
                              : nlohmann::json({{"workers", rows[recommended].workers},
                                                {"prefetch", rows[recommended].prefetch},
                                                {"images_per_s", rows[recommended].images_per_s}});
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

int PickRecommended(const std::vector<TuneRow>& rows) {
  if (rows.empty()) return -1;
  double best = 0;
  for (const TuneRow& r : rows) best = std::max(best, r.images_per_s);
  int pick = -1;
  for (size_t i = 0; i < rows.size(); ++i) {
    const TuneRow& r = rows[i];
    if (r.images_per_s < kGoodEnough * best) continue;
    if (pick < 0) {
      pick = static_cast<int>(i);
      continue;
    }
    const TuneRow& p = rows[static_cast<size_t>(pick)];
    if (std::tie(r.workers, r.prefetch, r.peak_rss_mib) <
        std::tie(p.workers, p.prefetch, p.peak_rss_mib)) {
      pick = static_cast<int>(i);
    }
  }
  return pick;
}

Command AddTuneCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("tune",
                                        "Sweep num_workers (1 to 2 x cores) and prefetch (1, 2, 4) "
                                        "on SOURCE and recommend a setting.");
  auto args = std::make_shared<TuneArgs>();
  AddSourceArgument(app, args->source);
  AddLimitOptions(app, args->limits);
  app->add_option("--pipeline", args->pipeline,
                  "train, val, decode or read (see feedline bench --help)")
      ->check(OneOf(PipelineNames()))
      ->type_name("train|val|decode|read")
      ->capture_default_str();
  app->add_option("--batch", args->batch, "Samples per batch")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->capture_default_str();
  app->add_option("--max-batches", args->max_batches,
                  "Batches measured per setting (bounds the run time)")
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
  app->add_option("--step-ms", args->step_ms,
                  "Simulated training step: the consumer sleeps MS per batch")
      ->check(NumberAtLeast(0))
      ->type_name("MS");
  app->add_option("--seed", args->seed, "Seed of the shuffle and the augmentation")
      ->check(IntAtLeast(0))
      ->type_name("S");
  app->add_option("--size", args->image_size, "Output image size of the train and val pipelines")
      ->check(IntAtLeast(1))
      ->type_name("PX")
      ->capture_default_str();
  app->add_option("--plot", args->plot, "Also draw images/s against workers into this SVG file")
      ->type_name("FILE.svg");
  app->add_flag("--json", args->json, "End stdout with the results as one JSON object");
  app->add_flag("--quiet", args->quiet, "No progress on stderr");
  return {app, [args] { return RunTuneCommand(*args); }};
}

}  // namespace feedline::cli
