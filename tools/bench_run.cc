#include "tools/bench_run.h"

#include <chrono>
#include <thread>

#include "feedline/data_loader.h"
#include "feedline/loop_report.h"
#include "tools/batch_memory.h"
#include "tools/rss.h"

namespace feedline::cli {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

LoaderOptions MakeLoaderOptions(const BenchSettings& settings) {
  LoaderOptions options;
  options.batch_size = settings.batch_size;
  // Training reads in random order (what the storage sees matters); the other
  // pipelines read in order, as evaluation does.
  options.shuffle = settings.pipeline == "train";
  options.num_workers = settings.workers;
  options.prefetch_factor = settings.prefetch;
  options.persistent_workers = settings.epochs > 1;
  options.seed = settings.seed;
  options.error_policy = ParseErrorPolicy(settings.error_policy);
  return options;
}

BenchResult RunBench(std::shared_ptr<const Dataset> dataset, const BenchSettings& settings,
                     int64_t max_batches, ProgressReporter* progress) {
  BenchResult result;
  result.settings = settings;
  const LoaderOptions options = MakeLoaderOptions(settings);
  if (dataset) CheckBatchMemory(*dataset, options, PhysicalMemoryBytes());
  DataLoader loader(std::move(dataset), options);
  const int64_t per_epoch = loader.size();
  auto step = std::chrono::duration<double, std::milli>(settings.step_ms);
  // For step_change_ms: the batches of the whole run, whose half is the change.
  const int64_t all_epochs = per_epoch * settings.epochs;
  const int64_t total_batches = max_batches >= 0 ? std::min(all_epochs, max_batches) : all_epochs;

  ProgressState state;
  state.epochs = settings.epochs;
  state.batches_per_epoch = max_batches >= 0 ? std::min(per_epoch, max_batches) : per_epoch;
  const Clock::time_point start = Clock::now();
  double verdict_s = 0;  // when the progress line's verdict was last worked out
  for (int64_t epoch = 0; epoch < settings.epochs; ++epoch) {
    if (max_batches >= 0 && result.batches >= max_batches) break;
    state.epoch = epoch;
    state.batch = 0;
    while (true) {
      const Clock::time_point asked = Clock::now();
      std::optional<Batch> batch = loader.Next();
      if (!batch) break;
      result.wait_s.push_back(SecondsSince(asked));
      result.delivered_s.push_back(SecondsSince(start));
      result.images += batch->size();
      ++result.batches;
      ++state.batch;
      // The simulated model step holds the batch, as training would.
      if (settings.step_change_ms >= 0 && result.change_batch < 0 &&
          result.batches * 2 >= total_batches) {
        result.change_batch = result.batches - 1;
        step = std::chrono::duration<double, std::milli>(settings.step_change_ms);
      }
      if (step.count() > 0) std::this_thread::sleep_for(step);
      if (progress != nullptr) {
        state.images = result.images;
        state.elapsed_s = SecondsSince(start);
        // The verdict the library gives any training loop (a snapshot a
        // second at most: the line is written every few seconds).
        if (state.elapsed_s - verdict_s >= 1.0) {
          state.verdict = Summarize(loader.stats(), {}, settings.workers).verdict;
          verdict_s = state.elapsed_s;
        }
        progress->Update(state);
      }
      if (max_batches >= 0 && result.batches >= max_batches) break;
    }
    // An epoch that delivered nothing (every sample failed under skip)
    // would repeat: the run ends rather than loop.
    if (state.batch == 0) break;
  }
  result.wall_s = SecondsSince(start);
  result.stats = loader.stats();
  if (progress != nullptr) progress->Finish();
  result.peak_rss_mib = PeakRssMib();
  return result;
}

}  // namespace feedline::cli
