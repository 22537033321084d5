// BatchFiller: loads the rows of a task into its slot and, when the last
// row of a batch is done, collates it and hands it to the Scheduler.
//
// Every row loads through the LoadBackend (LoadBackend::LoadRows) straight
// into the slot (fixed fields, declared or learned, are bound to their place
// in the batch, slot_layout.h); a failed or late load goes to the
// FailurePolicy, which may load substitutes into the same row through this
// class. Rows load one per call, except for a backend whose rows each cost a
// round trip (LoadsRowsTogether: worker processes, no timeout), which gets
// up to kMaxRowsTogether of a task's rows per call; what each row became is
// then handled row by row exactly as a row loaded alone, so the batches and
// the error policy do not change. With a loader timeout, each load is
// recorded in the worker's lane so that the consumer can give up on it
// (worker_pool.h).
//
// What a task cost (its worker's time and rows, and what its samples counted
// in their context: stage times, images decoded) goes to the StatsCollector
// before its rows count as finished, and a batch's collation stage time
// before the batch is handed over: a consumer that has every batch of an
// epoch sees all of the epoch's samples and stages in the loader's
// statistics. Only the worker's busy time collating is added just after
// the hand-over.
//
// Thread safety: RunTask runs on many workers at once, each on its own
// rows; the worker that finishes a batch's last row (the slot's atomic
// `finished` counter) collates it alone. No lock is held while loading.
#ifndef FEEDLINE_SRC_LOADER_BATCH_FILLER_H_
#define FEEDLINE_SRC_LOADER_BATCH_FILLER_H_

#include <cstdint>
#include <exception>
#include <optional>

#include "feedline/dataset.h"
#include "feedline/error.h"
#include "feedline/loader_options.h"
#include "feedline/sample_context.h"
#include "src/loader/error_policy.h"
#include "src/loader/load_backend.h"
#include "src/loader/scheduler.h"
#include "src/loader/slot.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

// The SampleError for a sample that threw `e`, with its index and source.
SampleError AsSampleError(const std::exception& e, const Dataset* dataset, int64_t index);

class BatchFiller {
 public:
  // `dataset` is null for an IterableDataset (which only uses FinishBatch).
  // Everything passed must outlive the filler.
  BatchFiller(const LoaderOptions& options, const Dataset* dataset, const LoadBackend* backend,
              SlotLayout* layout, const FailurePolicy* failure_policy, Scheduler* scheduler,
              StatsCollector* stats);

  // Loads the task's rows (stopping early, with the rest cancelled, if its
  // epoch is abandoned or its batch bound again) and finishes the batch if
  // these were its last rows. `lane` tracks each load for the timeout; the
  // time and rows count as `worker`'s. Returns the nanoseconds it took.
  int64_t RunTask(const Task& task, SampleContext& ctx, WorkerLane* lane, int worker);

  // Collates `slot`, whose rows are all done, unless it is no longer wanted,
  // and hands it to the scheduler. Returns true if it was made ready.
  bool FinishBatch(Slot* slot, SampleContext& ctx);

 private:
  // The most rows sent to LoadBackend::LoadRows in one call.
  static constexpr int64_t kMaxRowsTogether = 32;
  // Loads rows [begin, end) of `slot` (at most kMaxRowsTogether, none given
  // up on after a timeout) with one LoadBackend::LoadRows call into `rows`.
  void LoadTogether(Slot* slot, int64_t begin, int64_t end, SampleContext& ctx,
                    RowLoad* rows) const;
  // `error` is empty on entry and on return (scratch for LoadSample).
  // `loaded`, when not null, is the row's planned sample already loaded by
  // LoadTogether (with what it threw).
  void LoadRow(Slot* slot, int64_t row, SampleContext& ctx, WorkerLane* lane,
               std::optional<SampleError>* error, const RowLoad* loaded = nullptr);
  // Loads sample `index` (attempt 0: the planned one, k: the k-th substitute)
  // into `row`, as a span of one row, tracking it in `lane` for the timeout
  // check. On kFailed `error` holds the failure; a load that outlived the
  // timeout fails with reason "timeout" when it returns. With `loaded` the
  // sample is not loaded again: its outcome is taken from there.
  LoadOutcome LoadSample(Slot* slot, int64_t row, int64_t index, int attempt, SampleContext& ctx,
                         WorkerLane* lane, std::optional<SampleError>* error,
                         const RowLoad* loaded = nullptr);
  void CollateSlot(Slot* slot, SampleContext& ctx);
  static bool RowsFitLayout(const Slot& slot, const FixedLayout& layout);

  const LoaderOptions& options_;
  const Dataset* const dataset_;  // for the source of a failed sample
  const LoadBackend* const backend_;
  // Whether a task's rows go to the backend several per call
  // (LoadsRowsTogether).
  const bool together_;
  SlotLayout* const layout_;  // learns from the first batch collated (slot_layout.h)
  const FailurePolicy* const failure_policy_;
  Scheduler* const scheduler_;
  StatsCollector* const stats_;
  const int64_t timeout_ns_;  // 0: none
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_BATCH_FILLER_H_
