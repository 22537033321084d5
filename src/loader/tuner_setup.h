// How a loader's options become its tuner: which of num_workers and
// prefetch_factor are "auto" (kAuto), where they start, their limits, and
// how many worker threads the engine starts (the most the tuner may make
// active).
//
// Thread safety: pure functions of their arguments.
#ifndef FEEDLINE_SRC_LOADER_TUNER_SETUP_H_
#define FEEDLINE_SRC_LOADER_TUNER_SETUP_H_

#include <optional>

#include "feedline/loader_options.h"
#include "src/loader/tuner.h"
#include "src/loader/tuner_resources.h"

namespace feedline::internal {

struct AutoTuning {
  TunerConfig config;
  // Worker threads to start: max_workers when workers are tuned (the ones
  // beyond the tuner's choice wait, idle), else num_workers.
  int threads = 0;
};

// Checks the auto-related options: num_workers and prefetch_factor are
// >= 0 / >= 1 or kAuto, memory_budget_bytes >= 0; throws Error naming the
// option otherwise. Returns nullopt when neither is kAuto.
//
// An IterableDataset's batches depend on the worker count (each worker reads
// its own stream), so there "auto" is decided once, before loading
// (ResolveAutoStatically), and nothing is tuned while it runs.
std::optional<AutoTuning> PlanAutoTuning(const LoaderOptions& options,
                                         const TunerResources& resources, bool costly_workers);

// The options the engine runs with under `plan`: num_workers = the threads
// to start, prefetch_factor 1 when the tuner sets the slots (it sets the slot
// limit at once) or the fixed value; a kAuto left without a plan (prefetch
// "auto" with num_workers = 0) becomes 2.
LoaderOptions ResolvedOptions(LoaderOptions options, const std::optional<AutoTuning>& plan);

// The options with kAuto replaced by fixed values: one worker per core this
// loader may use (resources.max_workers), prefetch_factor 2. For loaders
// that do not tune while running (IterableDataset).
LoaderOptions ResolveAutoStatically(LoaderOptions options, const TunerResources& resources);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_TUNER_SETUP_H_
