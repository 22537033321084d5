#include "src/loader/engine.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/core/sample_context_access.h"
#include "src/loader/exception_kind.h"
#include "src/loader/fingerprint.h"
#include "src/loader/slot_allocator.h"
#include "src/loader/thread_load_backend.h"

namespace feedline::internal {
namespace {

// A chunk of rows should take about this long: long enough that claiming it
// under the lock is negligible, short enough to balance the load.
constexpr double kChunkTargetNs = 20000.0;
constexpr int64_t kMaxChunk = 4096;
// With num_workers = 0 and a deadline (TryNext), the caller's thread loads
// chunks of about this long, so it returns to its caller (the Python binding,
// which checks for Ctrl-C) within the deadline plus one chunk.
constexpr double kCallerChunkTargetNs = 1e6;
// The consumer loads rows itself while it waits only when a row costs at most
// this (LoadWhileWaitingLocked).
constexpr double kLendMaxNsPerRow = 1000.0;

int64_t ChunkFor(double ns_per_row, double target_ns) {
  if (ns_per_row <= 0) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(target_ns / ns_per_row), 1, kMaxChunk);
}

void UpdateAverage(double* ns_per_row, int64_t elapsed_ns, int64_t rows) {
  if (rows <= 0) return;
  const double per_row = static_cast<double>(elapsed_ns) / static_cast<double>(rows);
  *ns_per_row = *ns_per_row <= 0 ? per_row : 0.7 * *ns_per_row + 0.3 * per_row;
}

}  // namespace

Engine::Engine(std::shared_ptr<const Dataset> dataset, LoaderOptions options,
               std::shared_ptr<const LoadBackend> backend)
    // Worker processes cost a fork or a kill to change: the tuner waits
    // longer. The backend knows what its workers are, whichever front end
    // built it (LoaderOptions::worker_mode is a request the factory reads).
    : auto_plan_(PlanAutoTuning(options, DetectTunerResources(),
                                /*costly_workers=*/backend && backend->traits().costly_workers)),
      dataset_(std::move(dataset)),
      backend_(backend ? std::move(backend)
                       : std::make_shared<ThreadLoadBackend>(dataset_.get(), options.worker_init)),
      options_(ResolvedOptions(std::move(options), auto_plan_)),
      failure_policy_(options_, dataset_.get()),
      stats_(options_.num_workers),
      caller_ctx_(options_.seed, 0, 0, -1) {
  if (!dataset_) throw Error("DataLoader: dataset must not be null");
  ValidateOptions();
  if (options_.batch_sampler) {
    batch_sampler_ = options_.batch_sampler;
  } else {
    std::shared_ptr<const Sampler> sampler = options_.sampler;
    if (!sampler) {
      if (options_.shuffle) {
        sampler = std::make_shared<RandomSampler>(dataset_->size(), options_.seed);
      } else {
        sampler = std::make_shared<SequentialSampler>(dataset_->size());
      }
    }
    batch_sampler_ =
        std::make_shared<FixedBatchSampler>(sampler, options_.batch_size, options_.drop_last);
  }
  // A custom collate function owns the batch layout, so nothing is written in place then.
  Assemble(options_.collate_fn ? std::vector<FieldSpec>() : dataset_->FixedFields());
  StartTuner();
}

void Engine::StartTuner() {
  if (!auto_plan_) return;
  TunerConfig config = auto_plan_->config;
  config.max_slots = kMaxSlots;
  tuner_ = std::make_unique<TunerDriver>(
      config, [this](int workers, int slots) { ApplyTunedSetting(workers, slots); },
      [this] { return slot_usage().largest_slot_bytes; }, [this] { return epoch(); });
  ApplyTunedSetting(tuner_->workers(), tuner_->slots());
}

void Engine::ApplyTunedSetting(int workers, int slots) {
  if (options_.num_workers > 0) SetActiveWorkers(std::clamp(workers, 1, options_.num_workers));
  SetSlotLimit(slots);
}

StatsSnapshot Engine::stats() const {
  StatsSnapshot s = stats_.Snapshot();
  if (tuner_) s.tuner = tuner_->Snapshot();
  const SlotUsage usage = slot_usage();
  s.slots = usage.created;
  s.slot_bytes = usage.bytes;
  s.worker_restarts = backend_->worker_restarts();
  return s;
}

Engine::Engine(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options,
               std::shared_ptr<const LoadBackend> backend)
    // A stream per worker: the batches depend on the worker count, so "auto"
    // is decided once, here, and nothing is tuned while loading.
    : iterable_(std::move(dataset)),
      backend_(backend ? std::move(backend)
                       : std::make_shared<ThreadLoadBackend>(nullptr, options.worker_init)),
      options_(ResolveAutoStatically(std::move(options), DetectTunerResources())),
      failure_policy_(options_, nullptr),
      stats_(options_.num_workers),
      caller_ctx_(options_.seed, 0, 0, -1) {
  if (!iterable_) throw Error("DataLoader: dataset must not be null");
  ValidateOptions();
  if (options_.sampler || options_.batch_sampler || options_.shuffle) {
    throw Error("DataLoader: an IterableDataset takes no sampler, batch_sampler or shuffle");
  }
  Assemble({});
}

void Engine::Assemble(std::vector<FieldSpec> fixed) {
  layout_ = SlotLayout(std::move(fixed));
  // Worker processes write their rows into slots they can map.
  auto pool = std::make_shared<SlotPool>(std::max(2, options_.num_workers * options_.prefetch_factor),
                                         backend_->slot_allocator());
  SlotPool* pool_ptr = pool.get();
  scheduler_ = std::make_unique<Scheduler>(options_, batch_sampler_, dataset_.get(), backend_.get(),
                                           &layout_, std::move(pool), &stats_);
  filler_ = std::make_unique<BatchFiller>(options_, dataset_.get(), backend_.get(), &layout_,
                                          &failure_policy_, scheduler_.get());
  if (iterable_) {
    producer_ = std::make_unique<IterableProducer>(options_, iterable_, &layout_, scheduler_.get(),
                                                   filler_.get(), &stats_, &caller_ctx_);
  }
  if (options_.num_workers > 0) {
    workers_ = std::make_unique<ThreadWorkerPool>(
        &pool_ptr->mu(), &pool_ptr->wakeups(), options_.num_workers,
        [this](int worker, WorkerLane& lane) { WorkerBody(worker, lane); });
    if (producer_) producer_->set_workers(workers_.get());
    // A consumer that would wait may load as a waiting worker (map-style
    // thread workers only). Not with a timeout (nobody would watch the
    // consumer's own loads, and it cannot be replaced) nor a worker_init
    // (what it set up may belong to the worker's thread).
    // Batches owned by workers (batch_per_worker) are loaded by their owner only.
    lend_workers_ = !producer_ && options_.timeout.count() == 0 &&
                    !backend_->traits().starts_workers &&
                    !RowClaims::BatchPerWorker(options_, batch_sampler_ != nullptr);
    if (lend_workers_) {
      for (int w = 0; w < options_.num_workers; ++w) {
        lent_contexts_.push_back(std::make_unique<SampleContext>(options_.seed, 0, 0, w));
      }
    }
  }
}

Engine::~Engine() {
  {
    MutexLock lock(&scheduler_->mu());
    scheduler_->ShutdownLocked();
    if (workers_) {
      workers_->mu().AssertHeld();
      workers_->ShutdownLocked();
    }
  }
  // Workers retired after a timeout are still inside their sample, which
  // uses the parts of this engine: wait for them before those go.
  if (workers_) workers_->JoinRetired();
}

void Engine::ValidateOptions() {
  const LoaderOptions& o = options_;
  if (o.batch_sampler) {
    if (o.batch_size != 1 || o.shuffle || o.sampler || o.drop_last) {
      throw Error("DataLoader: batch_size, shuffle, sampler and drop_last must be left at their "
                  "defaults when batch_sampler is given");
    }
  } else if (o.batch_size < 1) {
    throw Error("DataLoader: batch_size must be >= 1, got " + std::to_string(o.batch_size));
  }
  if (o.sampler && o.shuffle) {
    throw Error("DataLoader: shuffle must be false when a sampler is given");
  }
  if (o.num_workers < 0) {
    throw Error("DataLoader: num_workers must be >= 0, got " + std::to_string(o.num_workers));
  }
  if (o.prefetch_factor < 1) {
    throw Error("DataLoader: prefetch_factor must be >= 1, got " +
                std::to_string(o.prefetch_factor));
  }
  if (o.num_workers > kMaxWorkers) {
    throw Error("DataLoader: num_workers must be at most " + std::to_string(kMaxWorkers) +
                ", got " + std::to_string(o.num_workers));
  }
  if (static_cast<int64_t>(o.num_workers) * o.prefetch_factor > kMaxSlots) {
    throw Error("DataLoader: num_workers * prefetch_factor (batches loaded ahead) must be at most " +
                std::to_string(kMaxSlots) + ", got " + std::to_string(o.num_workers) + " * " +
                std::to_string(o.prefetch_factor));
  }
  if (o.timeout.count() < 0) {
    throw Error("DataLoader: timeout must be >= 0, got " + std::to_string(o.timeout.count()) +
                " ms");
  }
  if (o.max_replace_attempts < 1) {
    throw Error("DataLoader: max_replace_attempts must be >= 1, got " +
                std::to_string(o.max_replace_attempts));
  }
}

int64_t Engine::size() const {
  if (iterable_) throw Error("DataLoader: an IterableDataset has no known number of batches");
  return batch_sampler_->size();
}

void Engine::set_epoch(int64_t epoch) {
  // One epoch: a batch sampler that pins one (DistributedBatchSampler's
  // set_epoch, as Paddle's loops call it) sets the loader's; a different
  // one here would be silently ignored, so it is an error.
  if (const std::optional<int64_t> pinned =
          batch_sampler_ ? batch_sampler_->pinned_epoch() : std::nullopt;
      pinned && *pinned != epoch) {
    throw Error("DataLoader: set_epoch(" + std::to_string(epoch) +
                ") disagrees with the batch sampler's set_epoch(" + std::to_string(*pinned) +
                "), which sets the loader's epoch; set it in one place (the sampler's "
                "set_epoch(-1) lets the loader count again)");
  }
  MutexLock lock(&scheduler_->mu());
  EpochCursor& cursor = scheduler_->cursor_locked();
  if (cursor.resume_pending()) {
    // A training loop that calls set_epoch(e) before each epoch keeps the
    // restored position when e is the restored epoch; another epoch drops it.
    if (epoch == cursor.epoch()) return;
    cursor.set_resume_pending(false);
    scheduler_->AbandonEpochLocked();
  }
  cursor.set_next_epoch(epoch);
}

int64_t Engine::epoch() const {
  MutexLock lock(&scheduler_->mu());
  const EpochCursor& cursor = scheduler_->cursor_locked();
  return cursor.running() ? cursor.epoch() : cursor.next_epoch();
}

LoaderState Engine::state() const {
  MutexLock lock(&scheduler_->mu());
  LoaderState state;
  state.fingerprint =
      FingerprintOf(options_, batch_sampler_.get(), dataset_ ? dataset_->size() : -1);
  const EpochCursor& cursor = scheduler_->cursor_locked();
  if (cursor.running()) {
    state.epoch = cursor.epoch();
    state.next_batch = cursor.delivered();
    state.fingerprint.num_batches = cursor.plan().num_batches();
    state.fingerprint.plan_hash = cursor.plan_hash();
  } else {
    // Between epochs: the next iteration starts the next epoch at batch 0.
    // Its plan is not drawn here (a Python sampler would be asked for an
    // epoch).
    state.epoch = cursor.next_epoch();
    if (iterable_ == nullptr) state.fingerprint.num_batches = batch_sampler_->size();
  }
  return state;
}

void Engine::Restore(const LoaderState& state) {
  if (iterable_) throw Error("DataLoader: an IterableDataset cannot be restored mid-epoch");
  if (state.next_batch < 0) {
    throw Error("Restore: next_batch must be >= 0, got " + std::to_string(state.next_batch));
  }
  const LoaderFingerprint mine = FingerprintOf(options_, batch_sampler_.get(), dataset_->size());
  std::string difference = FingerprintDifference(state.fingerprint, mine);
  if (!difference.empty()) throw Error("Restore: the state belongs to another loader: " + difference);
  MutexLock lock(&scheduler_->mu());
  EpochCursor& cursor = scheduler_->cursor_locked();
  scheduler_->AbandonEpochLocked();
  cursor.set_resume_pending(false);
  const int64_t next_epoch_before = cursor.next_epoch();
  StartEpochLocked(state.epoch, state.next_batch);
  // The plan is known now: check that it is the one the state was taken on.
  LoaderFingerprint planned;
  planned.num_batches = cursor.plan().num_batches();
  if (!state.fingerprint.plan_hash.empty()) planned.plan_hash = cursor.plan_hash();
  difference = FingerprintDifference(state.fingerprint, planned);
  if (!difference.empty()) {
    scheduler_->AbandonEpochLocked();
    cursor.set_next_epoch(next_epoch_before);
    throw Error("Restore: the state belongs to another loader: " + difference);
  }
  cursor.set_resume_pending(true);
}

void Engine::BeginIteration() {
  {
    MutexLock lock(&scheduler_->mu());
    if (scheduler_->cursor_locked().resume_pending()) {
      scheduler_->cursor_locked().set_resume_pending(false);
      return;
    }
  }
  Reset();
}

void Engine::Reset() {
  MutexLock lock(&scheduler_->mu());
  scheduler_->cursor_locked().set_resume_pending(false);
  scheduler_->consumer_locked().ClearInterrupt();  // it belonged to the epoch abandoned here
  scheduler_->AbandonEpochLocked();
  if (producer_) {
    producer_->mu().AssertHeld();  // the scheduler's, by the producer's name
    producer_->ResetLocked();
  }
  if (!options_.persistent_workers || iterable_) StopWorkersLocked();
}

void Engine::StartEpochLocked(int64_t epoch, int64_t first_batch) {
  scheduler_->StartEpochLocked(epoch, first_batch);
  if (workers_) {
    workers_->mu().AssertHeld();
    if (!workers_->started_locked()) {
      init_pending_.assign(static_cast<size_t>(options_.num_workers),
                           backend_->traits().starts_workers ? 1 : 0);
      workers_->StartLocked();
    }
  }
}

void Engine::StopWorkersLocked() {
  if (!workers_) return;
  workers_->mu().AssertHeld();
  workers_->StopLocked();
}

bool Engine::WorkersStoppingLocked() const {
  workers_->mu().AssertHeld();
  return workers_->stopping_locked();
}

// ---------------------------------------------------------------------------
// The consumer's side

std::optional<Batch> Engine::Next() {
  stats_.MarkStart();
  bool pending = false;
  std::optional<Batch> batch =
      producer_ ? producer_->Next(std::nullopt, &pending) : NextMapped(std::nullopt, &pending);
  if (batch && tuner_) tuner_->AfterBatch(stats_, NowNs());
  return batch;
}

NextStatus Engine::TryNext(std::chrono::milliseconds max_wait, Batch* out) {
  stats_.MarkStart();
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  bool pending = false;
  std::optional<Batch> batch =
      producer_ ? producer_->Next(deadline, &pending) : NextMapped(deadline, &pending);
  if (pending) return NextStatus::kPending;
  if (!batch) return NextStatus::kEnd;
  if (tuner_) tuner_->AfterBatch(stats_, NowNs());
  *out = std::move(*batch);
  return NextStatus::kBatch;
}

std::optional<Batch> Engine::NextMapped(std::optional<Clock::time_point> deadline, bool* pending) {
  MutexLock lock(&scheduler_->mu());
  EpochCursor& cursor = scheduler_->cursor_locked();
  // A restored epoch, once consumed, is an ordinary one.
  cursor.set_resume_pending(false);
  ConsumerSignal& consumer = scheduler_->consumer_locked();
  consumer.ThrowInterrupt();
  if (!cursor.running()) StartEpochLocked(cursor.next_epoch(), 0);
  int64_t wait_start = -1;
  while (true) {
    consumer.ThrowPending();
    if (cursor.all_delivered() &&
        std::find(init_pending_.begin(), init_pending_.end(), 1) != init_pending_.end()) {
      // Every batch is out, but a worker_init still runs and may fail.
      if (wait_start < 0) wait_start = NowNs();
      if (!WaitForBatchLocked(deadline)) {
        stats_.AddWait(NowNs() - wait_start);
        *pending = true;
        return std::nullopt;
      }
      continue;
    }
    if (cursor.all_delivered()) {
      cursor.End();
      if (!options_.persistent_workers) StopWorkersLocked();
      if (wait_start >= 0) stats_.AddWait(NowNs() - wait_start);
      return std::nullopt;
    }
    if (Slot* slot = scheduler_->TakeReadyLocked()) {
      if (wait_start >= 0) stats_.AddWait(NowNs() - wait_start);
      wait_start = -1;
      std::optional<Batch> batch = scheduler_->DeliverLocked(slot);
      if (batch) return batch;
      continue;
    }
    scheduler_->claims_locked().GrowIfCallerHoldsEverySlot(scheduler_->pool());
    if (wait_start < 0) wait_start = NowNs();
    if (!workers_) {
      // Load the next batch in this thread; with a deadline, in chunks, so
      // that TryNext returns in time.
      if (deadline && Clock::now() >= *deadline) {
        stats_.AddWait(NowNs() - wait_start);
        *pending = true;
        return std::nullopt;
      }
      const int64_t chunk =
          deadline ? ChunkFor(caller_ns_per_row_, kCallerChunkTargetNs) : kMaxChunk * 1024;
      Task task;
      if (!scheduler_->claims_locked().Claim(scheduler_->pool(), chunk, &task)) continue;
      const int64_t rows = task.end - task.begin;
      int64_t elapsed = 0;
      {
        MutexUnlock unlock(&scheduler_->mu());
        const int64_t t0 = NowNs();
        filler_->RunTask(task, caller_ctx_, &caller_lane_);
        elapsed = NowNs() - t0;
        stats_.AddWorker(0, elapsed, rows);
        stats_.AddStages(SampleContextAccess::DrainStageTimes(caller_ctx_));
      }
      UpdateAverage(&caller_ns_per_row_, elapsed, rows);
      continue;
    }
    if (LoadWhileWaitingLocked()) continue;
    if (!WaitForBatchLocked(deadline)) {
      stats_.AddWait(NowNs() - wait_start);
      *pending = true;
      return std::nullopt;
    }
  }
}

bool Engine::LoadWhileWaitingLocked() {
  if (!lend_workers_) return false;
  // Only rows that load in about a microsecond: the consumer then returns to
  // its batch within one chunk (~20 us), and loading them costs less than
  // the sleep, wake-up and context switches it saves. Slow rows (an image)
  // are left to the workers, whatever the wait.
  RowClaims& claims = scheduler_->claims_locked();
  const double ns_per_row = claims.row_ns();
  if (ns_per_row <= 0 || ns_per_row > kLendMaxNsPerRow) return false;
  const int worker = claims.LendWaitingWorker(scheduler_->pool());
  if (worker < 0) return false;
  Task task;
  try {
    if (!claims.Claim(scheduler_->pool(), ChunkFor(ns_per_row, kChunkTargetNs), &task)) {
      claims.ReturnWorker(scheduler_->pool(), worker);
      return false;
    }
  } catch (...) {
    // std::bad_alloc sizing a slot: the epoch ends, as when a worker meets it.
    claims.ReturnWorker(scheduler_->pool(), worker);
    scheduler_->InterruptLocked(std::current_exception());
    return true;
  }
  SampleContext& ctx = *lent_contexts_[static_cast<size_t>(worker)];
  try {
    MutexUnlock unlock(&scheduler_->mu());
    const int64_t t0 = NowNs();
    filler_->RunTask(task, ctx, &caller_lane_);
    stats_.AddWorker(worker, NowNs() - t0, task.end - task.begin);
    stats_.AddStages(SampleContextAccess::DrainStageTimes(ctx));
  } catch (...) {
    // The id goes back whatever ended the task (it must not stay lent), a
    // thread cancellation too; what would end a worker's task
    // (std::bad_alloc) ends the epoch, as there.
    claims.ReturnWorker(scheduler_->pool(), worker);
    RethrowIfCancellation();
    scheduler_->InterruptLocked(std::current_exception());
    return true;
  }
  claims.ReturnWorker(scheduler_->pool(), worker);
  return true;
}

bool Engine::WaitForBatchLocked(std::optional<Clock::time_point> deadline) {
  if (options_.timeout.count() == 0) return scheduler_->WaitForProgressLocked(deadline, std::nullopt);
  // Wake up regularly to look for a sample past the timeout.
  const bool waited = scheduler_->WaitForProgressLocked(
      deadline,
      std::min<std::chrono::milliseconds>(options_.timeout, std::chrono::milliseconds(50)));
  if (waited) CheckTimeoutsLocked();
  return waited;
}

void Engine::CheckTimeoutsLocked() {
  const int64_t limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.timeout).count();
  workers_->mu().AssertHeld();
  workers_->AbandonLateLoadsLocked(NowNs(), limit, scheduler_->generation(),
                                   [this](const LateLoad& late) {
                                     scheduler_->mu().AssertHeld();  // called under it
                                     scheduler_->RebindLocked(late);
                                   });
}

// ---------------------------------------------------------------------------
// Workers

bool Engine::InitWorker(int worker) {
  if (!backend_->traits().starts_workers) return true;
  try {
    // The backend says what failed (a worker_init, a worker process that
    // could not start), or passes an interrupt on as it is.
    backend_->StartWorker(worker);
    MutexLock lock(&scheduler_->mu());
    InitDoneLocked(worker);
    return true;
  } catch (...) {
    RethrowIfCancellation();
    MutexLock lock(&scheduler_->mu());
    scheduler_->consumer_locked().Fail(std::current_exception());
    InitDoneLocked(worker);
    return false;
  }
}

void Engine::InitDoneLocked(int worker) {
  const size_t w = static_cast<size_t>(worker);
  if (w >= init_pending_.size() || init_pending_[w] == 0) return;
  init_pending_[w] = 0;
  scheduler_->consumer_locked().Notify();  // a consumer may wait for it to end the epoch
}

void Engine::WorkerBody(int worker, WorkerLane& lane) {
  if (!InitWorker(worker)) return;
  if (producer_) {
    producer_->WorkerBody(worker);
  } else {
    LoadTasks(worker, lane);
  }
}

void Engine::LoadTasks(int worker, WorkerLane& lane) {
  SampleContext ctx(options_.seed, 0, 0, worker);
  double ns_per_row = 0;  // moving average of this worker's cost per row
  MutexLock lock(&scheduler_->mu());
  // Both parts live as long as the scheduler; what is used of them below
  // without the lock (WakeAnother, NoteRowCost) is safe without it.
  RowClaims& claims = scheduler_->claims_locked();
  WorkerRoster& roster = scheduler_->roster_locked();
  while (true) {
    try {
      // While the consumer borrows this worker's id (LoadWhileWaitingLocked)
      // the worker claims nothing. A worker the hold-back keeps waiting
      // looks again after a while (RowClaims::HoldBackCheck): the consumer
      // may keep the batch it holds.
      while (!(WorkersStoppingLocked() ||
               (claims.HasWork(scheduler_->pool(), worker) && !roster.lent(worker)))) {
        roster.SetWaiting(worker, true);
        scheduler_->pool().wakeups().Wait(scheduler_->mu(), worker,
                                          claims.HoldBackCheck(scheduler_->pool()));
        roster.SetWaiting(worker, false);
      }
      if (WorkersStoppingLocked()) return;
      Task task;
      if (!claims.Claim(scheduler_->pool(), ChunkFor(ns_per_row, kChunkTargetNs), &task, worker)) {
        continue;
      }
      const bool more = claims.WorthWakingAnother(scheduler_->pool(), worker);
      // The task runs without the lock; an exception takes it again on the
      // way out, for the handler below.
      MutexUnlock unlock(&scheduler_->mu());
      if (more) roster.WakeAnother();
      // Read before the rows are done: the slot may be recycled from then on.
      const int64_t batch_rows = task.slot->planned_rows;
      const int64_t t0 = NowNs();
      filler_->RunTask(task, ctx, &lane);
      const int64_t elapsed = NowNs() - t0;
      const int64_t rows = task.end - task.begin;
      UpdateAverage(&ns_per_row, elapsed, rows);
      claims.NoteRowCost(scheduler_->pool().wakeups(), ns_per_row, batch_rows);
      stats_.AddWorker(worker, elapsed, rows);
      stats_.AddStages(SampleContextAccess::DrainStageTimes(ctx));
      // Retired after a timeout: a replacement already took this worker's place.
      if (lane.retired.load()) return;
    } catch (...) {
      RethrowIfCancellation();
      // std::bad_alloc sizing a slot: the epoch ends and the consumer gets
      // it; this thread stays, for the next epoch.
      scheduler_->InterruptLocked(std::current_exception());
    }
  }
}

// ---------------------------------------------------------------------------
// Runtime controls

void Engine::SetActiveWorkers(int n) {
  const int most = std::max(1, options_.num_workers);
  if (n < 1 || n > most) {
    throw Error("SetActiveWorkers: n must be 1.." + std::to_string(most) +
                " (num_workers), got " + std::to_string(n));
  }
  // A stream's batches come round-robin from every worker: none may park.
  if (producer_) return;
  MutexLock lock(&scheduler_->mu());
  scheduler_->roster_locked().SetActive(n);
}

int Engine::active_workers() const {
  if (producer_) return std::max(1, options_.num_workers);
  MutexLock lock(&scheduler_->mu());
  return scheduler_->roster_locked().active();
}

void Engine::SetSlotLimit(int n) {
  if (n < 1 || n > kMaxSlots) {
    throw Error("SetSlotLimit: n must be 1.." + std::to_string(kMaxSlots) + ", got " +
                std::to_string(n));
  }
  MutexLock lock(&scheduler_->mu());
  if (producer_) {
    // Each worker's turn in the round-robin needs a slot of its own.
    n = std::max(n, std::max(1, options_.num_workers));
    producer_->mu().AssertHeld();
    producer_->SetSlotLimitLocked(n);
  }
  scheduler_->pool().SetLimitLocked(n);
}

int Engine::slot_limit() const {
  MutexLock lock(&scheduler_->mu());
  return scheduler_->pool().limit_locked();
}

SlotUsage Engine::slot_usage() const {
  MutexLock lock(&scheduler_->mu());
  return scheduler_->pool().UsageLocked();
}

}  // namespace feedline::internal
