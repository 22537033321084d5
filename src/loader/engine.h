// Engine: the DataLoader's machinery, composed of parts that each own one
// concept (src/loader/README.md, "The engine"):
//   - Scheduler (scheduler.h): the epoch plan, binding batches to slots,
//     claiming rows in chunks, retrying rebound batches, in-order delivery,
//     and the runtime controls; it owns the scheduling state and its lock;
//   - a SchedulingMode (scheduling_mode.h): the loops that drive the
//     Scheduler for map-style loading (MapScheduling: MapWorkerLoop and
//     MapConsumerLoop) or for an IterableDataset's streams
//     (IterableProducer);
//   - a WorkerPool (worker_pool.h; ThreadWorkerPool today): who runs the
//     loading, with start, stop, and replacement after a timeout;
//   - BatchFiller (batch_filler.h): loads rows into a slot and collates it,
//     with FailurePolicy (error_policy.h) deciding what a failed sample
//     becomes;
//   - SlotPool and its SlotAllocator (slot_pool.h, slot_allocator.h): the batch
//     slots and where their storage comes from;
//   - a LoadBackend (load_backend.h): where samples load, on the engine's
//     threads (ThreadLoadBackend) or in worker processes
//     (src/process/process_load_backend.h), given at construction.
// The Engine wires them, validates options, forwards Next() and the
// controls to the mode, and keeps the loader's state for checkpoints.
//
// Thread safety: Next(), TryNext(), Reset(), Restore() and set_epoch() are
// called by one consumer thread; stats(), the runtime controls
// (SetActiveWorkers, SetSlotLimit) and their accessors from any thread.
// All scheduling state is guarded by the scheduler's mutex, which the
// Scheduler owns; clang checks the annotations (-Wthread-safety; see
// thread_annotations.h).
#ifndef FEEDLINE_SRC_LOADER_ENGINE_H_
#define FEEDLINE_SRC_LOADER_ENGINE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"
#include "feedline/loader_state.h"
#include "feedline/next_status.h"
#include "feedline/stats.h"
#include "src/core/thread_annotations.h"
#include "src/loader/batch_filler.h"
#include "src/loader/error_policy.h"
#include "src/loader/iterable_producer.h"
#include "src/loader/load_backend.h"
#include "src/loader/map_scheduling.h"
#include "src/loader/scheduler.h"
#include "src/loader/scheduling_mode.h"
#include "src/loader/slot.h"
#include "src/loader/slot_pool.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/thread_worker_pool.h"
#include "src/loader/tuner_driver.h"
#include "src/loader/tuner_setup.h"
#include "src/loader/worker_init.h"

namespace feedline::internal {

class Engine {
 public:
  // Each worker is a thread and each slot a batch buffer: far past these
  // limits a typo would exhaust the machine rather than load faster.
  static constexpr int kMaxWorkers = 1024;
  static constexpr int kMaxSlots = 65536;

  // `backend` null: the samples load on the engine's threads
  // (ThreadLoadBackend).
  Engine(std::shared_ptr<const Dataset> dataset, LoaderOptions options,
         std::shared_ptr<const LoadBackend> backend = nullptr);
  // `backend` null: the streams are opened on the engine's threads; else its
  // StartWorker starts each worker before its stream is opened.
  Engine(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options,
         std::shared_ptr<const LoadBackend> backend = nullptr);
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
  // Counters a tuner measures: consumer wait, per-worker busy time and
  // samples, batches delivered (StatsCollector).
  // With num_workers or prefetch_factor "auto", also what the tuner chose.
  StatsSnapshot stats() const;
  const LoaderOptions& options() const { return options_; }

  // --- Runtime controls (thread-safe, from any thread, at any time) ------
  // Lets only workers 0 .. n-1 claim work; the others park after their
  // current chunk until let back in. n must be 1 .. max(1, num_workers).
  // The batches do not change (they never depend on which worker loads a
  // sample). An IterableDataset's batches come round-robin from every
  // worker's stream, so there every worker stays active.
  void SetActiveWorkers(int n);
  int active_workers() const;
  // The most batch slots in use at once (prefetched, being filled, or held
  // by the consumer), 1 .. kMaxSlots; starts at max(2, num_workers *
  // prefetch_factor). Slots are created only when the pipeline needs one
  // (a free slot is reused first); lowering the limit frees slots as they
  // come back. The batches do not change. An IterableDataset keeps at least
  // one slot per worker.
  void SetSlotLimit(int n);
  int slot_limit() const;
  SlotUsage slot_usage() const;

 private:
  void ValidateOptions();
  // With auto_plan_: makes the tuner and applies its starting setting.
  void StartTuner();
  void ApplyTunedSetting(int workers, int slots);
  // Builds the scheduler, filler and workers once options_ and the batch
  // sampler are known.
  void Assemble(std::vector<FieldSpec> fixed);

  // What a worker runs: the backend's StartWorker (worker_init, or its
  // process; WorkerInit), then loading (map-style) or producing from its
  // stream (IterableDataset).
  void WorkerBody(int worker, WorkerLane& lane);

  // num_workers / prefetch_factor "auto" (tuner_setup.h): planned from the
  // options as given, before options_ resolves them, hence declared first.
  std::optional<AutoTuning> auto_plan_;
  std::shared_ptr<const Dataset> dataset_;
  std::shared_ptr<const IterableDataset> iterable_;
  std::shared_ptr<const LoadBackend> backend_;  // never null once constructed
  LoaderOptions options_;
  // Runs the tuner from the consumer's side (after each delivered batch)
  // when auto_plan_ is set; made once the parts are assembled.
  std::unique_ptr<TunerDriver> tuner_;
  std::shared_ptr<const BatchSampler> batch_sampler_;
  SlotLayout layout_;  // fields written in place
  // Decides what a failed sample becomes (error_policy.h).
  FailurePolicy failure_policy_;
  StatsCollector stats_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<BatchFiller> filler_;
  std::unique_ptr<WorkerInit> worker_init_;
  // Map-style (MapScheduling) or a stream (IterableProducer).
  std::unique_ptr<SchedulingMode> mode_;
  // Declared last: its threads use the parts above, so it goes first.
  std::unique_ptr<WorkerPool> workers_;  // null with num_workers = 0
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_ENGINE_H_
