// IterableProducer: the loader's side of an IterableDataset. Each worker
// opens its own stream, Open(worker, num_workers, epoch), and fills whole
// batches from it; the consumer takes them round-robin over the workers, as
// torch does (so here the batches depend on the worker count). Each worker
// keeps at most a quota of undelivered batches (prefetch_factor), so a slow
// worker's turn always finds a slot. With num_workers = 0 the caller's
// thread reads the one stream.
//
// Thread safety: the round-robin state is guarded by the scheduler's mutex.
// Next() and ResetLocked() are called by the consumer; WorkerBody runs on
// the pool's workers.
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
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class IterableProducer {
 public:
  // Everything passed must outlive the producer.
  IterableProducer(const LoaderOptions& options, std::shared_ptr<const IterableDataset> dataset,
                   const SlotLayout* layout, Scheduler* scheduler, BatchFiller* filler,
                   StatsCollector* stats);
  // The scheduler's mutex, which guards the producer's state.
  Mutex& mu() const RETURN_CAPABILITY(scheduler_->mu()) { return scheduler_->mu(); }

  // The next batch in round-robin order; starts an epoch if none runs.
  // nullopt at the end of the epoch, or (with *pending set) when `deadline`
  // passed first.
  std::optional<Batch> Next(std::optional<Scheduler::Clock::time_point> deadline, bool* pending)
      EXCLUDES(scheduler_->mu());
  // Drops the caller's stream (num_workers = 0) of an abandoned epoch.
  void ResetLocked() REQUIRES(scheduler_->mu()) { main_stream_.reset(); }
  // Changes how many undelivered batches each worker may keep, for a slot
  // limit of `slots` (at least one each).
  void SetSlotLimitLocked(int slots) REQUIRES(scheduler_->mu());

  // What each worker runs.
  void WorkerBody(int worker) EXCLUDES(scheduler_->mu());

 private:
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
