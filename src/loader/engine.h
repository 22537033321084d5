// Engine: the DataLoader's machinery: epoch plans, the slot pool, worker
// threads that pull single samples, in-order delivery, error policies,
// timeouts and statistics. DataLoader is a thin facade over it.
//
// Scheduling: the batches of an epoch are bound, in order, to free slots; a
// bound batch's rows are claimed by workers in chunks (one row for slow
// samples, more for trivial ones, sized so a chunk takes ~20 us) and written
// in place. The worker that completes the last row of a batch collates it and
// marks it ready. The consumer takes ready batches in order.
//
// Thread safety: Next(), Reset(), Restore() and set_epoch() are called by one
// consumer thread; stats() from any thread. The scheduler's state is guarded
// by one mutex, the slot pool's (pool_->mu(): a released slot is new work);
// members and functions say so with GUARDED_BY / REQUIRES, which clang checks
// (-Wthread-safety; see thread_annotations.h).
#ifndef FEEDLINE_SRC_LOADER_ENGINE_H_
#define FEEDLINE_SRC_LOADER_ENGINE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/data_loader.h"
#include "feedline/dataset.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"
#include "src/loader/error_policy.h"
#include "src/loader/mutex.h"
#include "src/loader/slot.h"
#include "src/loader/stats_collector.h"
#include "src/loader/thread_annotations.h"

namespace feedline::internal {

// The SampleError for a sample that threw `e`, with its index and source.
SampleError AsSampleError(const std::exception& e, const Dataset* dataset, int64_t index);

class Engine {
 public:
  Engine(std::shared_ptr<const Dataset> dataset, LoaderOptions options);
  Engine(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options);
  ~Engine();

  int64_t size() const;
  void set_epoch(int64_t epoch);
  int64_t epoch() const;
  std::optional<Batch> Next();
  NextStatus TryNext(std::chrono::milliseconds max_wait, Batch* out);
  void Reset();
  // What begin() does: continues an epoch that Restore started and nothing
  // has consumed yet; otherwise Reset().
  void BeginIteration();
  LoaderState state() const;
  void Restore(const LoaderState& state);
  StatsSnapshot stats() const { return stats_.Snapshot(); }
  const LoaderOptions& options() const { return options_; }

 private:
  // A range of rows of one slot handed to a worker.
  struct Task {
    Slot* slot = nullptr;
    int64_t begin = 0;
    int64_t end = 0;
    uint64_t generation = 0;
  };
  // One worker thread's place ("lane"): what it is loading now, for the
  // timeout check. There are 2 * num_workers lanes: a thread stuck in a
  // sample past the timeout is retired and a replacement takes a free lane,
  // so at most num_workers threads are ever stuck at once.
  struct Busy {
    Mutex mu;  // taken per sample only with a timeout
    Slot* slot GUARDED_BY(mu) = nullptr;
    int64_t row GUARDED_BY(mu) = -1;
    int64_t index GUARDED_BY(mu) = -1;
    int attempt GUARDED_BY(mu) = 0;        // 0: the planned sample; k: its k-th substitute
    int64_t since_ns GUARDED_BY(mu) = -1;  // -1: not loading
    bool abandoned GUARDED_BY(mu) = false; // the consumer gave up on this load
    // Guarded by the pool mutex (the engine's; not nameable from here).
    bool live = false;      // a thread runs on this lane
    int worker = -1;        // the worker id that thread serves
    std::thread::id thread_id;
    // Set by the consumer: the thread exits once its sample returns.
    std::atomic<bool> retired{false};
  };

  void ValidateOptions();
  int SlotCapacity() const;

  // Epochs (map-style).
  void StartEpochLocked(int64_t epoch, int64_t first_batch) REQUIRES(pool_->mu());
  void AbandonEpochLocked() REQUIRES(pool_->mu());
  using Clock = std::chrono::steady_clock;
  std::optional<Batch> NextMapped(std::optional<Clock::time_point> deadline, bool* pending);
  // Waits for a batch to become ready (or the timeout check); returns false
  // if the deadline passed. Releases the mutex while it waits.
  bool WaitForBatchLocked(std::optional<Clock::time_point> deadline) REQUIRES(pool_->mu());

  // Worker threads.
  void StartWorkers() REQUIRES(pool_->mu());
  // Stops and joins the worker threads, releasing the mutex while it joins.
  void StopWorkers() REQUIRES(pool_->mu());
  // Starts a worker thread for `worker` on a free lane; false if none is free.
  bool StartThreadLocked(int worker) REQUIRES(pool_->mu());
  // Joins retired threads whose sample has returned.
  void ReapRetiredLocked() REQUIRES(pool_->mu());
  // The thread body: WorkerMain, then frees its lane.
  void WorkerThread(int worker, int lane);
  void WorkerMain(int worker, int lane);
  // Runs worker_init; on failure records it for the consumer and returns false.
  bool InitWorker(int worker) EXCLUDES(pool_->mu());
  // Records an error that ends iteration and wakes the consumer.
  void FailLocked(const std::string& message) REQUIRES(pool_->mu());
  void FailLocked(std::exception_ptr error) REQUIRES(pool_->mu());
  // Something that is not a failed sample escaped a dataset, a collate
  // function or the engine itself (an interrupt such as Python's
  // KeyboardInterrupt, std::bad_alloc): ends the epoch; the consumer's
  // Next() rethrows it once. Dropped if `generation` (the work's) is no
  // longer the running one. Takes the mutex.
  void Interrupt(std::exception_ptr error, uint64_t generation) EXCLUDES(pool_->mu());
  void InterruptLocked(std::exception_ptr error) REQUIRES(pool_->mu());
  bool HasWorkLocked() const REQUIRES(pool_->mu());
  bool ClaimLocked(int64_t chunk, Task* task) REQUIRES(pool_->mu());
  void BindLocked(Slot* slot, int64_t batch_index) REQUIRES(pool_->mu());
  void EnsureRowsLocked(Slot* slot, int64_t rows) REQUIRES(pool_->mu());
  // Accounts a slot's unclaimed rows as finished (the slot will not be
  // loaded further) and returns it to the pool if nothing else is pending.
  void DropUnclaimedLocked(Slot* slot) REQUIRES(pool_->mu());
  void RunTask(const Task& task, SampleContext& ctx, Busy* busy);
  void LoadRow(Slot* slot, int64_t row, SampleContext& ctx, Busy* busy);
  // Loads sample `index` (attempt 0: the planned one, k: the k-th substitute)
  // into `row`, tracking it in `busy` for the timeout check. On kFailed
  // `error` holds the failure; a load that outlived the timeout fails with
  // reason "timeout" when it returns.
  LoadOutcome LoadSample(Slot* slot, int64_t row, int64_t index, int attempt, SampleContext& ctx,
                         Busy* busy, std::optional<SampleError>* error);
  // Rethrows (once) what Interrupt recorded.
  void ThrowInterruptLocked() REQUIRES(pool_->mu());
  void FinishBatch(Slot* slot, SampleContext& ctx) EXCLUDES(pool_->mu());
  void CollateSlot(Slot* slot, SampleContext& ctx);
  // Adds the batch's errors, skipped and replaced rows to the statistics.
  void CountOutcomes(Slot* slot);
  // Gives up on loads past the timeout: their batches are bound again to
  // fresh slots, with those rows failed ("timeout").
  void CheckTimeoutsLocked() REQUIRES(pool_->mu());
  void RebindLocked(Slot* old_slot, int64_t row, int attempt) REQUIRES(pool_->mu());
  // The whole epoch's plan; an epoch too large to plan is an Error naming
  // its size rather than std::length_error / std::bad_alloc.
  EpochPlan PlanEpoch(int64_t epoch) const;
  Slot* FindReadyLocked() REQUIRES(pool_->mu());
  // Adds a slot when the caller holds all of them (list(loader)), since no
  // batch could be loaded otherwise.
  void GrowIfCallerHoldsEverySlotLocked() REQUIRES(pool_->mu());

  // Iterable datasets.
  void IterableWorkerMain(int worker);
  void FillFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx, bool* exhausted);
  // A free slot set up for the next batch of `producer`.
  Slot* TakeStreamSlotLocked(int producer, int64_t epoch, uint64_t generation)
      REQUIRES(pool_->mu());
  // Fills `slot` from `stream` without the lock, publishes it (or frees it if
  // empty) and returns whether the stream ended. Enters and leaves locked.
  bool ProduceFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx, int worker)
      REQUIRES(pool_->mu());
  std::optional<Batch> NextIterable(std::optional<Clock::time_point> deadline, bool* pending);

  // The consumer's side of delivery: returns the batch, throws its error, or
  // returns nullopt for an empty batch.
  std::optional<Batch> DeliverLocked(Slot* slot) REQUIRES(pool_->mu());

  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const IterableDataset> iterable_;
  LoaderOptions options_;
  std::shared_ptr<const BatchSampler> batch_sampler_;
  std::vector<FieldSpec> fixed_;  // fields written in place
  std::vector<size_t> fixed_row_bytes_;
  std::shared_ptr<SlotPool> pool_;
  // Decides what a failed sample becomes (error_policy.h).
  FailurePolicy failure_policy_;
  StatsCollector stats_;
  std::vector<Busy> busy_;  // lanes of worker threads
  Busy caller_busy_;        // the caller's thread, with num_workers = 0
  // The caller's thread context (num_workers = 0): its scratch buffers are
  // kept from batch to batch.
  SampleContext caller_ctx_;

  // The scheduler's state.
  std::vector<std::thread> threads_ GUARDED_BY(pool_->mu());
  // Threads retired after a timeout, still inside their sample: joined once
  // it returns (ReapRetiredLocked) or by the destructor.
  // (lane, thread)
  std::vector<std::pair<int, std::thread>> retired_threads_ GUARDED_BY(pool_->mu());
  // Batches bound again after a timeout, whose rows are claimed before the
  // open batch's.
  std::vector<Slot*> retry_ GUARDED_BY(pool_->mu());
  int orphaned_slots_ GUARDED_BY(pool_->mu()) = 0;      // slots waiting for a late load to return
  std::exception_ptr interrupt_ GUARDED_BY(pool_->mu());  // rethrown once by the consumer
  double caller_ns_per_row_ GUARDED_BY(pool_->mu()) = 0;  // num_workers = 0: moving average per row
  bool running_ GUARDED_BY(pool_->mu()) = false;        // an epoch is in progress
  // Restore started the running epoch and no Next() has run since: the next
  // iteration continues it instead of starting afresh.
  bool resume_pending_ GUARDED_BY(pool_->mu()) = false;
  // Of plan_, computed when state() first needs it.
  mutable std::string plan_hash_ GUARDED_BY(pool_->mu());
  bool stop_workers_ GUARDED_BY(pool_->mu()) = false;   // workers of this epoch must exit
  int64_t epoch_ GUARDED_BY(pool_->mu()) = 0;           // the running epoch
  int64_t next_epoch_ GUARDED_BY(pool_->mu()) = 0;      // the epoch the next iteration runs
  EpochPlan plan_ GUARDED_BY(pool_->mu());
  int64_t next_bind_ GUARDED_BY(pool_->mu()) = 0;       // next batch to bind to a slot
  int64_t next_deliver_ GUARDED_BY(pool_->mu()) = 0;    // in order: next batch to hand out
  // Batches handed out (or skipped) this epoch.
  int64_t delivered_ GUARDED_BY(pool_->mu()) = 0;
  // The bound batch whose rows are being claimed.
  Slot* open_ GUARDED_BY(pool_->mu()) = nullptr;
  std::exception_ptr fatal_ GUARDED_BY(pool_->mu());    // a worker_init failure
  // Iterable mode: per worker, batches produced, and whether its stream ended.
  std::vector<int64_t> produced_ GUARDED_BY(pool_->mu());
  std::vector<int64_t> consumed_ GUARDED_BY(pool_->mu());
  std::vector<bool> exhausted_ GUARDED_BY(pool_->mu());
  int rr_next_ GUARDED_BY(pool_->mu()) = 0;             // round-robin cursor over workers
  // Iterable mode with num_workers = 0: the stream read in the caller's thread.
  std::unique_ptr<SampleStream> main_stream_ GUARDED_BY(pool_->mu());

  std::atomic<uint64_t> generation_{0};
  // Bumped (under the pool mutex) by every event the consumer may wait for:
  // a batch ready, a stream exhausted, a worker failing.
  std::atomic<uint64_t> progress_{0};
  // The consumer waits here for progress_ to move; counted so that workers
  // notify only when it waits.
  CondVar ready_cv_;
  int consumer_waiting_ GUARDED_BY(pool_->mu()) = 0;
  std::atomic<bool> shutdown_{false};
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_ENGINE_H_
