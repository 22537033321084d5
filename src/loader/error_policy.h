// FailurePolicy: what the loader does with a sample that failed to load
// (LoaderOptions::error_policy): raise it with its batch, skip its row, or
// replace it with substitutes drawn deterministically, up to
// max_replace_attempts loads in all. The engine loads; this decides.
//
// It is the one owner of that decision for map-style datasets: the engine
// calls HandleFailure for a row whose load failed (or ran past the timeout)
// and passes a SubstituteLoader through which the policy loads substitutes
// into the same row, with the engine's timeout tracking.
#ifndef FEEDLINE_SRC_LOADER_ERROR_POLICY_H_
#define FEEDLINE_SRC_LOADER_ERROR_POLICY_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "feedline/dataset.h"
#include "feedline/error.h"
#include "feedline/loader_options.h"
#include "src/loader/slot.h"

namespace feedline::internal {

// How one load of a sample into a row ended.
enum class LoadOutcome { kOk, kFailed, kAbandoned };

// Loads a substitute into the row being handled (implemented by the engine).
class SubstituteLoader {
 public:
  // Loads sample `index` as load number `attempt` of the row (k: its k-th
  // substitute). On kFailed `error` holds the failure.
  virtual LoadOutcome Load(int64_t index, int attempt, std::optional<SampleError>* error) = 0;

 protected:
  ~SubstituteLoader() = default;
};

class FailurePolicy {
 public:
  // `dataset` (not owned; null for an IterableDataset) names sources and
  // bounds substitutes; it must outlive the policy.
  FailurePolicy(const LoaderOptions& options, const Dataset* dataset);

  // The index loaded by `attempt` of a row planned as `original` (attempt 0:
  // the planned sample). Depends only on (seed, epoch, original, attempt), so
  // a replaced batch is the same on every run and worker count.
  int64_t SubstituteIndex(int64_t epoch, int64_t original, int attempt) const;

  // The TimeoutError for sample `index`.
  SampleError TimeoutFor(int64_t index) const;

  // Applies the policy to row `row` of `slot`, whose load number
  // `attempt - 1` (0: the planned sample) failed with `error`: records the
  // failure for the statistics, then sets the row's status (skipped,
  // failed with the error the batch raises, or replaced by a substitute
  // loaded through `loader`).
  void HandleFailure(Slot* slot, int64_t row, SampleError error, int attempt,
                     SubstituteLoader& loader) const;

 private:
  const ErrorPolicy policy_;
  const int max_replace_attempts_;
  const uint64_t seed_;
  const std::chrono::milliseconds timeout_;
  const Dataset* const dataset_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_ERROR_POLICY_H_
