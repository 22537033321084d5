// IterableProducer: the scheduling of an IterableDataset (SchedulingMode,
// scheduling_mode.h). Each worker
// opens its own stream, Open(worker, num_workers, epoch), and fills whole
// batches from it; the consumer takes them round-robin over the workers, as
// torch does (so here the batches depend on the worker count). Each worker
// keeps at most a quota of undelivered batches (prefetch_factor), so a slow
// worker's turn always finds a slot. With num_workers = 0 the caller's
// thread reads the one stream.
//
// Thread safety: the round-robin state is guarded by the scheduler's mutex.
// Next() and Reset() are called by the consumer; RunWorker runs on the
// pool's workers.
#ifndef FEEDLINE_SRC_LOADER_ITERABLE_PRODUCER_H_
#define FEEDLINE_SRC_LOADER_ITERABLE_PRODUCER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "feedline/batch.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"
#include "feedline/sample_context.h"
#include "src/core/thread_annotations.h"
#include "src/loader/batch_filler.h"
#include "src/loader/scheduler.h"
#include "src/loader/scheduling_mode.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class IterableProducer : public SchedulingMode {
 public:
  // Everything passed must outlive the producer.
  IterableProducer(const LoaderOptions& options, std::shared_ptr<const IterableDataset> dataset,
                   const SlotLayout* layout, Scheduler* scheduler, BatchFiller* filler,
                   StatsCollector* stats);

  // The next batch in round-robin order; starts an epoch if none runs.
  std::optional<Batch> Next(std::optional<Clock::time_point> deadline, bool* pending) override
      EXCLUDES(scheduler_->mu());
  // Abandons the epoch, stops the workers and drops the caller's stream
  // (num_workers = 0).
  void Reset() override EXCLUDES(scheduler_->mu());
  // Opens worker `worker`'s stream and fills batches from it.
  void RunWorker(int worker, WorkerLane& lane) override EXCLUDES(scheduler_->mu());

  // A stream's batches come round-robin from every worker: none may park.
  void SetActiveWorkers(int) override {}
  int active_workers() const override { return streams_; }
  // At least one slot per worker; each worker may keep slots / workers
  // undelivered batches.
  void SetSlotLimit(int n) override EXCLUDES(scheduler_->mu());

 private:
  // A pending interrupt is rethrown; an epoch starts if none runs (the
  // workers start again, to open their streams for it).
  void BeginTakeLocked() REQUIRES(scheduler_->mu());
  // Moves the round-robin to the next worker that can still deliver; false
  // if none can (the epoch ended).
  bool FindTurnLocked() REQUIRES(scheduler_->mu());
  // The batch whose turn it is, if ready (and the turn passes on), or null.
  Slot* TakeTurnLocked() REQUIRES(scheduler_->mu());
  // Adds a slot if none could be loaded otherwise.
  void MakeRoomLocked() REQUIRES(scheduler_->mu());
  // num_workers = 0: fills the next batch from the caller's stream.
  void ProduceInCallerLocked() REQUIRES(scheduler_->mu());
  // Destroys `stream` with the lock released meanwhile: a stream may be a
  // Python iterator, and Python code may free a batch, whose release takes
  // the lock (epoch_planner.h). Opening one is done without it too.
  void DropStreamLocked(std::unique_ptr<SampleStream> stream) REQUIRES(scheduler_->mu());
  // Waits for progress; false if the deadline passed first.
  bool WaitForTurnLocked(std::optional<Clock::time_point> deadline) REQUIRES(scheduler_->mu());
  // Opens `worker`'s stream for `epoch`; null (the consumer told) if it failed.
  std::unique_ptr<SampleStream> OpenStream(int worker, int64_t epoch) EXCLUDES(scheduler_->mu());
  // Fills `slot` from `stream` (no lock held); sets *exhausted at its end.
  void FillFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx, bool* exhausted);
  // A free slot set up for the next batch of `producer`.
  Slot* TakeStreamSlotLocked(int producer, int64_t epoch, uint64_t generation)
      REQUIRES(scheduler_->mu());
  // Fills `slot` from `stream` without the lock, publishes it (or frees it if
  // empty) and returns whether the stream ended. Enters and leaves locked.
  bool ProduceFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx, int worker)
      REQUIRES(scheduler_->mu());
  // True if the consumer, waiting for `worker`'s next batch, would wait
  // forever: no slot is free and none is being filled by `worker`, so every
  // slot is held by the caller (a kept batch) or by another worker's batch
  // waiting for its turn, which comes after this one.
  bool AwaitedWorkerStarvedLocked(int worker) const REQUIRES(scheduler_->mu());

  const LoaderOptions& options_;
  const std::shared_ptr<const IterableDataset> dataset_;
  const SlotLayout* const layout_;
  Scheduler* const scheduler_;
  BatchFiller* const filler_;
  StatsCollector* const stats_;
  // num_workers = 0: the caller's thread reads the stream with this context.
  SampleContext caller_ctx_;
  const int streams_;  // max(1, num_workers)

  // Per worker: batches produced and delivered, and whether its stream ended.
  std::vector<int64_t> produced_ GUARDED_BY(scheduler_->mu());
  std::vector<int64_t> consumed_ GUARDED_BY(scheduler_->mu());
  std::vector<bool> exhausted_ GUARDED_BY(scheduler_->mu());
  int rr_next_ GUARDED_BY(scheduler_->mu()) = 0;  // round-robin cursor over workers
  int64_t quota_ GUARDED_BY(scheduler_->mu());    // undelivered batches per worker
  // num_workers = 0: the stream read in the caller's thread.
  std::unique_ptr<SampleStream> main_stream_ GUARDED_BY(scheduler_->mu());
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_ITERABLE_PRODUCER_H_
