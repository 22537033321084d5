#include "src/loader/engine.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/loader/fingerprint.h"
#include "src/loader/slot_allocator.h"
#include "src/loader/thread_load_backend.h"

namespace feedline::internal {

namespace {

// Beyond any image's side: a padded extent rounded up to it stays far from
// overflowing.
constexpr int64_t kMaxPadMultiple = 65536;

// Checks each field's pad multiples and lists the field as padded.
void PadFieldsWithMultiples(CollateOptions& collate) {
  for (const PadMultiple& pad : collate.pad_multiples) {
    for (int64_t m : pad.multiples) {
      if (m < 1 || m > kMaxPadMultiple) {
        throw Error("DataLoader: the pad multiples of field '" + pad.field +
                    "' must be from 1 to " + std::to_string(kMaxPadMultiple) + ", got " +
                    std::to_string(m));
      }
    }
    if (std::find(collate.padded.begin(), collate.padded.end(), pad.field) ==
        collate.padded.end()) {
      collate.padded.push_back(pad.field);
    }
  }
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
      stats_(options_.num_workers) {
  if (!dataset_) throw Error("DataLoader: dataset must not be null");
  ValidateOptions();
  for (std::string& name : dataset_->PaddedFields()) {
    std::vector<std::string>& padded = options_.collate.padded;
    if (std::find(padded.begin(), padded.end(), name) == padded.end()) padded.push_back(std::move(name));
  }
  // The dataset's multiples, unless the options name the field already;
  // every such field is padded in every batch.
  std::vector<PadMultiple>& multiples = options_.collate.pad_multiples;
  for (PadMultiple& pad : dataset_->PadMultiples()) {
    const bool given = std::any_of(multiples.begin(), multiples.end(),
                                   [&](const PadMultiple& p) { return p.field == pad.field; });
    if (!given) multiples.push_back(std::move(pad));
  }
  PadFieldsWithMultiples(options_.collate);
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
      stats_(options_.num_workers) {
  if (!iterable_) throw Error("DataLoader: dataset must not be null");
  ValidateOptions();
  PadFieldsWithMultiples(options_.collate);
  if (options_.sampler || options_.batch_sampler || options_.shuffle) {
    throw Error("DataLoader: an IterableDataset takes no sampler, batch_sampler or shuffle");
  }
  Assemble({});
}

void Engine::Assemble(std::vector<FieldSpec> fixed) {
  layout_ = SlotLayout(std::move(fixed));
  // Worker processes write their rows into slots they can map.
  scheduler_ = std::make_unique<Scheduler>(
      options_, batch_sampler_, dataset_.get(), backend_.get(), &layout_,
      std::max(2, options_.num_workers * options_.prefetch_factor), &stats_);
  filler_ = std::make_unique<BatchFiller>(options_, dataset_.get(), backend_.get(), &layout_,
                                          &failure_policy_, scheduler_.get(), &stats_);
  worker_init_ = std::make_unique<WorkerInit>(backend_.get(), scheduler_.get());
  if (iterable_) {
    mode_ = std::make_unique<IterableProducer>(options_, iterable_, &layout_, scheduler_.get(),
                                               filler_.get(), &stats_);
  } else {
    mode_ = std::make_unique<MapScheduling>(options_, backend_.get(), scheduler_.get(),
                                            filler_.get(), &stats_);
  }
  if (options_.num_workers > 0) {
    workers_ = std::make_unique<ThreadWorkerPool>(
        &scheduler_->mu(), &scheduler_->wakeups(), options_.num_workers,
        [this](int worker, WorkerLane& lane) { WorkerBody(worker, lane); });
    scheduler_->AttachWorkers(workers_.get());
  }
}

Engine::~Engine() {
  {
    MutexLock lock(&scheduler_->mu());
    scheduler_->ShutdownLocked();
  }
  // Workers retired after a timeout are still inside their sample, which
  // uses the parts of this engine: wait for them before those go.
  scheduler_->JoinRetiredWorkers();
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
  // Planned before the lock is taken (epoch_planner.h says why).
  PlannedEpoch restored = scheduler_->PlanEpoch(state.epoch);
  MutexLock lock(&scheduler_->mu());
  EpochCursor& cursor = scheduler_->cursor_locked();
  scheduler_->AbandonEpochLocked();
  cursor.set_resume_pending(false);
  const int64_t next_epoch_before = cursor.next_epoch();
  scheduler_->StartEpochLocked(std::move(restored), state.next_batch);
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

void Engine::Reset() { mode_->Reset(); }

// ---------------------------------------------------------------------------
// The consumer's side

std::optional<Batch> Engine::Next() {
  stats_.MarkStart();
  bool pending = false;
  std::optional<Batch> batch = mode_->Next(std::nullopt, &pending);
  if (batch && tuner_) tuner_->AfterBatch(stats_, NowNs());
  return batch;
}

NextStatus Engine::TryNext(std::chrono::milliseconds max_wait, Batch* out) {
  stats_.MarkStart();
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  bool pending = false;
  std::optional<Batch> batch = mode_->Next(deadline, &pending);
  if (pending) return NextStatus::kPending;
  if (!batch) return NextStatus::kEnd;
  if (tuner_) tuner_->AfterBatch(stats_, NowNs());
  *out = std::move(*batch);
  return NextStatus::kBatch;
}

// ---------------------------------------------------------------------------
// Workers

void Engine::WorkerBody(int worker, WorkerLane& lane) {
  if (worker_init_->Run(worker)) mode_->RunWorker(worker, lane);
}

// ---------------------------------------------------------------------------
// Runtime controls

void Engine::SetActiveWorkers(int n) {
  const int most = std::max(1, options_.num_workers);
  if (n < 1 || n > most) {
    throw Error("SetActiveWorkers: n must be 1.." + std::to_string(most) +
                " (num_workers), got " + std::to_string(n));
  }
  mode_->SetActiveWorkers(n);
}

int Engine::active_workers() const { return mode_->active_workers(); }

void Engine::SetSlotLimit(int n) {
  if (n < 1 || n > kMaxSlots) {
    throw Error("SetSlotLimit: n must be 1.." + std::to_string(kMaxSlots) + ", got " +
                std::to_string(n));
  }
  mode_->SetSlotLimit(n);
}

int Engine::slot_limit() const {
  MutexLock lock(&scheduler_->mu());
  return scheduler_->slot_limit_locked();
}

SlotUsage Engine::slot_usage() const {
  MutexLock lock(&scheduler_->mu());
  return scheduler_->SlotUsageLocked();
}

}  // namespace feedline::internal
