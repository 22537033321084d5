#include "src/loader/tuner_setup.h"

#include <algorithm>
#include <string>

#include "feedline/error.h"

namespace feedline::internal {
namespace {

void CheckAutoOptions(const LoaderOptions& o) {
  if (o.num_workers < 0 && o.num_workers != kAuto) {
    throw Error("DataLoader: num_workers must be >= 0, got " + std::to_string(o.num_workers) +
                " (or kAuto: the loader sets it)");
  }
  if (o.prefetch_factor < 1 && o.prefetch_factor != kAuto) {
    throw Error("DataLoader: prefetch_factor must be >= 1, got " +
                std::to_string(o.prefetch_factor) + " (or kAuto: the loader sets it)");
  }
  if (o.memory_budget_bytes < 0) {
    throw Error("DataLoader: memory_budget_bytes must be >= 0 (0: a share of the available "
                "memory), got " +
                std::to_string(o.memory_budget_bytes));
  }
}

}  // namespace

std::optional<AutoTuning> PlanAutoTuning(const LoaderOptions& options,
                                         const TunerResources& resources, bool costly_workers) {
  CheckAutoOptions(options);
  const bool auto_workers = options.num_workers == kAuto;
  const bool auto_prefetch = options.prefetch_factor == kAuto;
  // With no worker there is nothing to prefetch into: prefetch "auto" alone
  // with num_workers = 0 changes nothing.
  if (!auto_workers && (!auto_prefetch || options.num_workers == 0)) return std::nullopt;
  AutoTuning plan;
  TunerConfig& c = plan.config;
  c.tune_workers = auto_workers;
  c.tune_slots = auto_prefetch;
  c.max_workers = std::max(1, resources.max_workers);
  c.workers = auto_workers ? 0 : options.num_workers;
  c.prefetch_factor = auto_prefetch ? 2 : options.prefetch_factor;
  c.memory_budget_bytes = options.memory_budget_bytes > 0 ? options.memory_budget_bytes
                                                          : resources.memory_budget_bytes;
  c.costly_workers = costly_workers;
  plan.threads = auto_workers ? c.max_workers : options.num_workers;
  return plan;
}

LoaderOptions ResolvedOptions(LoaderOptions options, const std::optional<AutoTuning>& plan) {
  if (plan) {
    options.num_workers = plan->threads;
    options.prefetch_factor = plan->config.tune_slots ? 1 : plan->config.prefetch_factor;
  }
  if (options.prefetch_factor == kAuto) options.prefetch_factor = 2;
  return options;
}

LoaderOptions ResolveAutoStatically(LoaderOptions options, const TunerResources& resources) {
  CheckAutoOptions(options);
  if (options.num_workers == kAuto) {
    options.num_workers = std::max(1, resources.max_workers);
  }
  if (options.prefetch_factor == kAuto) options.prefetch_factor = 2;
  return options;
}

}  // namespace feedline::internal
