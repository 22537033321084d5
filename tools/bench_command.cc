#include "tools/bench_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "feedline/error.h"
#include "feedline/loader_options.h"
#include "feedline/storage/remote_options.h"
#include "feedline/synth/index_dataset.h"
#include "tools/bench_run.h"
#include "tools/diagnosis.h"
#include "tools/failure_recorder.h"
#include "tools/load_shape.h"
#include "tools/progress.h"
#include "tools/report.h"
#include "tools/source.h"

namespace feedline::cli {
namespace {

// An integer >= min, or "auto".
CLI::Validator IntAtLeastOrAuto(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        if (text == "auto") return "";
        long long value = 0;
        size_t used = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == text.size() && used > 0 && value >= min && value <= (1 << 20)) return "";
        return "must be an integer >= " + std::to_string(min) + " or 'auto', got '" + text + "'";
      },
      "");
}

// Broken files named after the report; `feedline verify` lists them all.
constexpr size_t kBrokenFilesShown = 10;

struct BenchArgs {
  SourceArgs input;  // SOURCE, --fields, --max-file-bytes, --max-pixels
  long long synthetic = -1;
  LoadShape shape;  // --pipeline, --batch, --size, --seed, --step-ms
  std::string workers = "auto";
  // Empty: auto with --workers auto, else 2 (the library's default): a fixed
  // worker count measures a fixed setting.
  std::string prefetch;
  long long epochs = 1;
  double step_change_ms = -1;
  std::string error_policy = "skip";
  long long max_batches = -1;
  bool json = false;
  bool quiet = false;
};

int RunBenchCommand(const BenchArgs& args) {
  BenchSettings settings;
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<FailureRecorder> recorder;  // of a SOURCE
  if (args.synthetic >= 0) {
    if (!args.input.source.empty()) {
      throw UsageError("give either SOURCE or --synthetic N, not both");
    }
    if (!args.input.fields.empty()) {
      throw UsageError("--fields names datasets of an HDF5 SOURCE; --synthetic reads none");
    }
    if (args.synthetic == 0) throw UsageError("--synthetic: must be an integer >= 1, got '0'");
    dataset = std::make_shared<synth::IndexDataset>(args.synthetic);
    settings.source = "synthetic";
    settings.source_kind = "synthetic";
    settings.pipeline = "index";
  } else {
    if (args.input.source.empty()) {
      throw UsageError(
          "SOURCE is required: an image folder, a file list, packed shards or an HDF5 file (or "
          "--synthetic N)");
    }
    const ParsedSource source = ParseSource(args.input);
    recorder = std::make_shared<FailureRecorder>(
        OpenSource(source, args.shape.pipeline, args.shape.image_size, args.input.limits),
        kBrokenFilesShown);
    dataset = recorder;
    settings.source = args.input.source;
    settings.source_kind = SourceKindName(source.kind);
    settings.remote = storage::IsRemoteLocation(args.input.source);
    settings.cached = !source.remote.cache_dir.empty();
    settings.pipeline = args.shape.pipeline;
  }
  settings.batch_size = args.shape.batch;
  // "auto": the loader's online tuner sets them while it runs (docs/tuning.md).
  settings.workers = args.workers == "auto" ? kAuto : ParseWorkers(args.workers);
  const std::string prefetch =
      !args.prefetch.empty() ? args.prefetch : (args.workers == "auto" ? "auto" : "2");
  settings.prefetch = prefetch == "auto" ? kAuto : std::stoi(prefetch);
  settings.epochs = args.epochs;
  settings.step_ms = args.shape.step_ms;
  settings.step_change_ms = args.step_change_ms;
  settings.seed = args.shape.seed;
  settings.error_policy = args.error_policy;
  settings.cores = CpuCount();

  const ProgressReporter::Mode mode =
      args.quiet ? ProgressReporter::Mode::kOff : ProgressReporter::ModeFor(stderr);
  ProgressReporter progress(stderr, mode);
  BenchResult result;
  try {
    result = RunBench(dataset, settings, args.max_batches, &progress);
  } catch (const SampleError& e) {
    // main() suggests skip or replace for a failure under raise; under
    // replace the failure means every substitute failed too, and under skip
    // (a failed collate) no policy helps.
    if (settings.error_policy == "raise") throw;
    if (settings.error_policy != "replace") throw std::runtime_error(e.what());
    throw std::runtime_error(std::string(e.what()) +
                             " (under --error-policy replace a sample ends the run only when its "
                             "substitutes all fail too: is most of SOURCE broken? 'feedline verify "
                             "SOURCE' lists the broken files)");
  }
  // With "auto" the diagnosis reads the setting the tuner ended with.
  BenchResult as_tuned = result;
  if (result.stats.tuner.enabled) {
    const TunerStats& t = result.stats.tuner;
    as_tuned.settings.workers = t.workers;
    as_tuned.settings.prefetch = std::max(1, t.slots / std::max(1, t.workers));
  }
  const Diagnosis diagnosis = Diagnose(as_tuned);
  std::cout << FormatReport(result, diagnosis);
  nlohmann::json broken_json = nlohmann::json::array();
  if (recorder) {
    // The files skip or replace went past, named (the loader only counts them).
    for (const RecordedFailure& f : recorder->failures()) {
      std::cout << "broken: " << f.path << ": " << f.reason << ": " << f.message << "\n";
      broken_json.push_back({{"path", f.path}, {"reason", f.reason}, {"message", f.message}});
    }
    const int64_t more = recorder->distinct_failures() - static_cast<int64_t>(broken_json.size());
    if (more > 0) {
      std::cout << "broken: ... and " << more << " more ('feedline verify " << settings.source
                << "' lists them all)\n";
    }
  }
  if (args.json) {
    nlohmann::json json = ReportJson(result, diagnosis);
    json["broken_files"] = broken_json;
    json["broken_files_total"] = recorder ? recorder->distinct_failures() : 0;
    std::cout << json.dump() << "\n";
  }
  std::cout.flush();
  if (result.images == 0) {
    // A benchmark of nothing is no result: say so where scripts look.
    std::fprintf(stderr,
                 "feedline bench: error: no image was loaded: all %lld samples failed (%s); "
                 "'feedline verify %s' lists the broken files\n",
                 static_cast<long long>(result.stats.errors), FailureReasons(result.stats).c_str(),
                 settings.source.c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

Command AddBenchCommand(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "bench",
      "Measure the loader on SOURCE: images/s, time to first batch, consumer wait, "
      "per-stage breakdown, peak memory, errors, and a diagnosis.");
  auto args = std::make_shared<BenchArgs>();
  AddSourceOptions(app, args->input);
  CLI::Option* synthetic =
      app->add_option("--synthetic", args->synthetic,
                      "Run over N in-memory samples (each its int64 index) instead of SOURCE: the "
                      "engine's own overhead")
          ->check(IntAtLeast(1))
          ->type_name("N");
  synthetic->excludes(AddLoadShapeOptions(app, args->shape));
  app->add_option("--workers", args->workers,
                  "Worker threads (0 loads in the training thread); auto: the loader sets them "
                  "while it runs, up to one per CPU (docs/tuning.md)")
      ->check(WorkersValue())
      ->type_name("N|auto")
      ->capture_default_str();
  app->add_option("--prefetch", args->prefetch,
                  "Batches in flight per worker; auto: the loader sets how many it keeps, "
                  "within a memory budget. Default: auto with --workers auto, else 2")
      ->check(IntAtLeastOrAuto(1))
      ->type_name("N|auto");
  app->add_option("--epochs", args->epochs, "Passes over the data")
      ->check(IntAtLeast(1))
      ->type_name("N")
      ->capture_default_str();
  app->add_option("--step-change-ms", args->step_change_ms,
                  "After half of the batches the simulated step becomes MS (a training whose "
                  "step time changes; --json reports the wait after the change)")
      ->check(NumberAtLeast(0))
      ->type_name("MS");
  app->add_option("--error-policy", args->error_policy,
                  "What a sample that fails to load does: raise stops the run, skip drops it, "
                  "replace substitutes another")
      ->check(OneOf({"raise", "skip", "replace"}))
      ->type_name("raise|skip|replace")
      ->capture_default_str();
  app->add_option("--max-batches", args->max_batches, "Stop after this many batches in all")
      ->check(IntAtLeast(1))
      ->type_name("N");
  AddOutputFlags(app, args->json, args->quiet);
  return {app, [args] { return RunBenchCommand(*args); }};
}

}  // namespace feedline::cli
