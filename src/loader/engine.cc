#include "src/loader/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cxxabi.h>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/core/sample_binder.h"
#include "src/loader/fingerprint.h"

namespace feedline::internal {
namespace {

// A chunk of rows should take about this long: long enough that claiming it
// under the lock is negligible, short enough to balance the load.
constexpr double kChunkTargetNs = 20000.0;
constexpr int64_t kMaxChunk = 4096;
// Times the consumer yields, watching for a ready batch, before it sleeps.
constexpr int kConsumerPolls = 64;
// With num_workers = 0 and a deadline (TryNext), the caller's thread loads
// chunks of about this long, so it returns to its caller (the Python binding,
// which checks for Ctrl-C) within the deadline plus one chunk.
constexpr double kCallerChunkTargetNs = 1e6;
constexpr int kMaxWorkers = 1024;
constexpr int64_t kMaxSlots = 65536;

int64_t ChunkFor(double ns_per_row, double target_ns) {
  if (ns_per_row <= 0) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(target_ns / ns_per_row), 1, kMaxChunk);
}

}  // namespace

SampleError AsSampleError(const std::exception& e, const Dataset* dataset, int64_t index) {
  std::string source;
  try {
    source = dataset != nullptr ? dataset->Source(index) : std::string();
  } catch (...) {
  }
  if (const auto* se = dynamic_cast<const SampleError*>(&e)) {
    return SampleError(se->reason(), se->source().empty() ? source : se->source(), se->message(),
                       index);
  }
  return SampleError("exception", source, e.what(), index);
}

Engine::Engine(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : dataset_(std::move(dataset)),
      options_(std::move(options)),
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
  if (!options_.collate_fn) fixed_ = dataset_->FixedFields();
  for (const FieldSpec& spec : fixed_) {
    fixed_row_bytes_.push_back(static_cast<size_t>(spec.shape.elements()) * DTypeSize(spec.dtype));
  }
  pool_ = std::make_shared<SlotPool>(SlotCapacity());
  busy_ = std::vector<Busy>(2 * static_cast<size_t>(std::max(1, options_.num_workers)));
}

Engine::Engine(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options)
    : iterable_(std::move(dataset)),
      options_(std::move(options)),
      failure_policy_(options_, nullptr),
      stats_(options_.num_workers),
      caller_ctx_(options_.seed, 0, 0, -1) {
  if (!iterable_) throw Error("DataLoader: dataset must not be null");
  ValidateOptions();
  if (options_.sampler || options_.batch_sampler || options_.shuffle) {
    throw Error("DataLoader: an IterableDataset takes no sampler, batch_sampler or shuffle");
  }
  pool_ = std::make_shared<SlotPool>(SlotCapacity());
  busy_ = std::vector<Busy>(2 * static_cast<size_t>(std::max(1, options_.num_workers)));
}

Engine::~Engine() {
  std::vector<std::pair<int, std::thread>> retired;
  {
    MutexLock lock(&pool_->mu());
    shutdown_.store(true);
    generation_.fetch_add(1);
    running_ = false;
    if (dataset_) dataset_->AbandonInFlight();
    StopWorkers();
    // Threads retired after a timeout are still inside their sample. A thread
    // cannot be interrupted: this waits until that sample returns.
    retired.swap(retired_threads_);
  }
  for (auto& entry : retired) entry.second.join();
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
  // Each worker is a thread and each slot a batch buffer: far past these
  // limits a typo would exhaust the machine rather than load faster.
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

int Engine::SlotCapacity() const {
  return std::max(2, options_.num_workers * options_.prefetch_factor);
}

int64_t Engine::size() const {
  if (iterable_) throw Error("DataLoader: an IterableDataset has no known number of batches");
  return batch_sampler_->size();
}

void Engine::set_epoch(int64_t epoch) {
  MutexLock lock(&pool_->mu());
  if (resume_pending_) {
    // A training loop that calls set_epoch(e) before each epoch keeps the
    // restored position when e is the restored epoch; another epoch drops it.
    if (epoch == epoch_) return;
    resume_pending_ = false;
    AbandonEpochLocked();
  }
  next_epoch_ = epoch;
}

int64_t Engine::epoch() const {
  MutexLock lock(&pool_->mu());
  return running_ ? epoch_ : next_epoch_;
}

LoaderState Engine::state() const {
  MutexLock lock(&pool_->mu());
  LoaderState state;
  state.fingerprint =
      FingerprintOf(options_, batch_sampler_.get(), dataset_ ? dataset_->size() : -1);
  if (running_) {
    state.epoch = epoch_;
    state.next_batch = delivered_;
    state.fingerprint.num_batches = plan_.num_batches();
    if (plan_hash_.empty()) plan_hash_ = PlanHash(plan_);
    state.fingerprint.plan_hash = plan_hash_;
  } else {
    // Between epochs: the next iteration starts `next_epoch_` at batch 0. Its
    // plan is not drawn here (a Python sampler would be asked for an epoch).
    state.epoch = next_epoch_;
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
  MutexLock lock(&pool_->mu());
  AbandonEpochLocked();
  resume_pending_ = false;
  const int64_t next_epoch_before = next_epoch_;
  StartEpochLocked(state.epoch, state.next_batch);
  // The plan is known now: check that it is the one the state was taken on.
  LoaderFingerprint planned;
  planned.num_batches = plan_.num_batches();
  if (!state.fingerprint.plan_hash.empty()) planned.plan_hash = plan_hash_ = PlanHash(plan_);
  difference = FingerprintDifference(state.fingerprint, planned);
  if (!difference.empty()) {
    AbandonEpochLocked();
    next_epoch_ = next_epoch_before;
    throw Error("Restore: the state belongs to another loader: " + difference);
  }
  resume_pending_ = true;
}

void Engine::BeginIteration() {
  {
    MutexLock lock(&pool_->mu());
    if (resume_pending_) {
      resume_pending_ = false;
      return;
    }
  }
  Reset();
}

void Engine::Reset() {
  MutexLock lock(&pool_->mu());
  resume_pending_ = false;
  interrupt_ = nullptr;  // it belonged to the epoch abandoned here
  AbandonEpochLocked();
  main_stream_.reset();
  if (!options_.persistent_workers || iterable_) StopWorkers();
}

// ---------------------------------------------------------------------------
// Epochs

void Engine::StartEpochLocked(int64_t epoch, int64_t first_batch) {
  const std::optional<int64_t> pinned = batch_sampler_->pinned_epoch();
  epoch_ = pinned ? *pinned : epoch;
  next_epoch_ = epoch + 1;
  plan_ = PlanEpoch(epoch_);
  plan_hash_.clear();
  if (first_batch > plan_.num_batches()) {
    throw Error("Restore: next_batch " + std::to_string(first_batch) + " is past the " +
                std::to_string(plan_.num_batches()) + " batches of epoch " +
                std::to_string(epoch_));
  }
  next_bind_ = first_batch;
  next_deliver_ = first_batch;
  delivered_ = first_batch;
  open_ = nullptr;
  running_ = true;
  generation_.fetch_add(1);
  if (options_.num_workers > 0 && threads_.empty()) StartWorkers();
  pool_->WakeWorkers();
}

void Engine::AbandonEpochLocked() {
  if (!running_) return;
  running_ = false;
  // Rows nobody claimed will not be loaded: count them as finished, or their
  // slots would never come back.
  if (open_ != nullptr) DropUnclaimedLocked(open_);
  open_ = nullptr;
  for (Slot* slot : retry_) DropUnclaimedLocked(slot);
  retry_.clear();
  generation_.fetch_add(1);
  // Samples in flight belong to the abandoned epoch: a dataset that can stop
  // them (worker processes) does, so that joining the workers does not wait
  // for a stuck one.
  if (dataset_) dataset_->AbandonInFlight();
  // Ready batches of the abandoned epoch go straight back; slots still being
  // filled are returned by the worker that finishes them.
  for (const auto& slot : pool_->slots_locked()) {
    if (slot->state == SlotState::kReady) pool_->PutLocked(slot.get());
  }
  pool_->WakeWorkers();
}

EpochPlan Engine::PlanEpoch(int64_t epoch) const {
  auto too_large = [&] {
    const int64_t samples = dataset_ ? dataset_->size() : -1;
    return Error("DataLoader: the plan of epoch " + std::to_string(epoch) + " (every index of " +
                 std::to_string(samples) +
                 " samples, the dataset's length) does not fit in memory; check len(dataset)");
  };
  try {
    return batch_sampler_->Plan(epoch);
  } catch (const std::length_error&) {
    throw too_large();
  } catch (const std::bad_alloc&) {
    throw too_large();
  }
}

void Engine::DropUnclaimedLocked(Slot* slot) {
  const int64_t n = slot->planned_rows - slot->claimed;
  if (n <= 0) return;
  slot->claimed = slot->planned_rows;
  if (slot->finished.fetch_add(n, std::memory_order_acq_rel) + n == slot->planned_rows) {
    // Nothing was loading: nobody else will finish it.
    if (slot->orphaned.exchange(false)) --orphaned_slots_;
    pool_->PutLocked(slot);
  }
}

void Engine::StartWorkers() {
  stop_workers_ = false;
  for (int w = 0; w < options_.num_workers; ++w) {
    if (iterable_) {
      threads_.emplace_back(&Engine::IterableWorkerMain, this, w);
    } else {
      StartThreadLocked(w);
    }
  }
}

bool Engine::StartThreadLocked(int worker) {
  ReapRetiredLocked();
  for (size_t lane = 0; lane < busy_.size(); ++lane) {
    Busy& b = busy_[lane];
    if (b.live) continue;
    b.live = true;
    b.worker = worker;
    b.retired.store(false);
    try {
      threads_.emplace_back(&Engine::WorkerThread, this, worker, static_cast<int>(lane));
    } catch (...) {
      b.live = false;
      throw;
    }
    b.thread_id = threads_.back().get_id();
    return true;
  }
  return false;
}

void Engine::ReapRetiredLocked() {
  for (size_t i = 0; i < retired_threads_.size();) {
    if (busy_[static_cast<size_t>(retired_threads_[i].first)].live) {
      ++i;
      continue;
    }
    // The thread marked its lane free as its last step under the lock: the
    // join does not wait for anything that needs the lock.
    retired_threads_[i].second.join();
    retired_threads_.erase(retired_threads_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void Engine::StopWorkers() {
  if (threads_.empty()) return;
  stop_workers_ = true;
  std::vector<std::thread> threads;
  threads.swap(threads_);
  {
    MutexUnlock unlock(&pool_->mu());
    pool_->WakeWorkers();
    for (std::thread& t : threads) t.join();
  }
  stop_workers_ = false;
}

std::optional<Batch> Engine::Next() {
  stats_.MarkStart();
  bool pending = false;
  return iterable_ ? NextIterable(std::nullopt, &pending) : NextMapped(std::nullopt, &pending);
}

NextStatus Engine::TryNext(std::chrono::milliseconds max_wait, Batch* out) {
  stats_.MarkStart();
  const auto deadline = std::chrono::steady_clock::now() + max_wait;
  bool pending = false;
  std::optional<Batch> batch =
      iterable_ ? NextIterable(deadline, &pending) : NextMapped(deadline, &pending);
  if (pending) return NextStatus::kPending;
  if (!batch) return NextStatus::kEnd;
  *out = std::move(*batch);
  return NextStatus::kBatch;
}

std::optional<Batch> Engine::DeliverLocked(Slot* slot) {
  ++delivered_;
  if (slot->raise) {
    SampleError error = *slot->raise;
    pool_->PutLocked(slot);
    pool_->WakeWorkers();
    if (error.reason() == "timeout") throw TimeoutError(error);
    throw error;
  }
  if (slot->rows == 0) {  // every sample skipped
    pool_->PutLocked(slot);
    pool_->WakeWorkers();
    return std::nullopt;
  }
  pool_->MarkDeliveredLocked(slot);
  stats_.AddBatch();
  stats_.MarkFirstBatch();
  return Batch(pool_, slot);
}

void Engine::GrowIfCallerHoldsEverySlotLocked() {
  // Slots waiting for a late load (timeouts) are as unusable as held ones.
  if (!pool_->HasFreeLocked() && pool_->delivered_count_locked() + orphaned_slots_ >=
                                     pool_->capacity() + pool_->grown_locked()) {
    pool_->GrowLocked();  // nothing can be loaded otherwise: make one more slot
    pool_->WakeWorkers();
  }
}

Slot* Engine::FindReadyLocked() {
  const uint64_t generation = generation_.load();
  Slot* best = nullptr;
  for (const auto& slot : pool_->slots_locked()) {
    Slot* s = slot.get();
    if (s->state != SlotState::kReady || s->generation != generation) continue;
    if (options_.in_order) {
      if (s->batch_index == next_deliver_) return s;
    } else if (best == nullptr || s->batch_index < best->batch_index) {
      best = s;
    }
  }
  return best;
}

std::optional<Batch> Engine::NextMapped(std::optional<Clock::time_point> deadline, bool* pending) {
  MutexLock lock(&pool_->mu());
  resume_pending_ = false;  // a restored epoch, once consumed, is an ordinary one
  ThrowInterruptLocked();
  if (!running_) StartEpochLocked(next_epoch_, 0);
  int64_t wait_start = -1;
  while (true) {
    if (fatal_) std::rethrow_exception(fatal_);
    ThrowInterruptLocked();
    if (delivered_ >= plan_.num_batches()) {
      running_ = false;
      if (!options_.persistent_workers) StopWorkers();
      if (wait_start >= 0) stats_.AddWait(NowNs() - wait_start);
      return std::nullopt;
    }
    if (Slot* slot = FindReadyLocked()) {
      if (wait_start >= 0) stats_.AddWait(NowNs() - wait_start);
      wait_start = -1;
      if (options_.in_order) ++next_deliver_;
      std::optional<Batch> batch = DeliverLocked(slot);
      if (batch) return batch;
      continue;
    }
    GrowIfCallerHoldsEverySlotLocked();
    if (wait_start < 0) wait_start = NowNs();
    if (options_.num_workers == 0) {
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
      if (!ClaimLocked(chunk, &task)) continue;
      const int64_t rows = task.end - task.begin;
      int64_t elapsed = 0;
      {
        MutexUnlock unlock(&pool_->mu());
        const int64_t t0 = NowNs();
        RunTask(task, caller_ctx_, &caller_busy_);
        elapsed = NowNs() - t0;
        stats_.AddWorker(0, elapsed, rows);
        stats_.AddStages(caller_ctx_.DrainStageTimes());
      }
      if (rows > 0) {
        const double per_row = static_cast<double>(elapsed) / static_cast<double>(rows);
        caller_ns_per_row_ =
            caller_ns_per_row_ <= 0 ? per_row : 0.7 * caller_ns_per_row_ + 0.3 * per_row;
      }
      continue;
    }
    if (!WaitForBatchLocked(deadline)) {
      stats_.AddWait(NowNs() - wait_start);
      *pending = true;
      return std::nullopt;
    }
  }
}

bool Engine::WaitForBatchLocked(std::optional<Clock::time_point> deadline) {
  if (deadline && Clock::now() >= *deadline) return false;
  // A batch usually completes within microseconds of the last: poll briefly
  // (yielding the core to the workers) before paying for a futex sleep and
  // the wake-up a worker would have to send.
  const uint64_t seen = progress_.load(std::memory_order_acquire);
  {
    MutexUnlock unlock(&pool_->mu());
    for (int spin = 0; spin < kConsumerPolls; ++spin) {
      if (progress_.load(std::memory_order_acquire) != seen) break;
      std::this_thread::yield();
    }
  }
  // progress_ only changes under the lock, so this predicate cannot miss a
  // change made while the lock was dropped for polling.
  auto moved = [&] { return progress_.load(std::memory_order_relaxed) != seen; };
  if (moved()) return true;
  ++consumer_waiting_;
  if (options_.timeout.count() > 0) {
    // Wake up regularly to look for a sample past the timeout.
    auto until = Clock::now() + std::min<std::chrono::milliseconds>(options_.timeout,
                                                                    std::chrono::milliseconds(50));
    if (deadline && *deadline < until) until = *deadline;
    while (!moved() && ready_cv_.WaitUntil(&pool_->mu(), until)) {
    }
    --consumer_waiting_;
    if (dataset_) CheckTimeoutsLocked();
  } else if (deadline) {
    while (!moved() && ready_cv_.WaitUntil(&pool_->mu(), *deadline)) {
    }
    --consumer_waiting_;
  } else {
    while (!moved()) ready_cv_.Wait(&pool_->mu());
    --consumer_waiting_;
  }
  return true;
}

void Engine::CheckTimeoutsLocked() {
  const int64_t limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.timeout).count();
  const int64_t now = NowNs();
  const uint64_t generation = generation_.load();
  for (size_t lane = 0; lane < busy_.size(); ++lane) {
    Busy& b = busy_[lane];
    Slot* slot = nullptr;
    int64_t row = -1;
    int attempt = 0;
    bool rebind = false;
    {
      MutexLock guard(&b.mu);
      if (b.since_ns < 0 || b.abandoned || now - b.since_ns <= limit) continue;
      slot = b.slot;
      if (slot->generation != generation) continue;  // an abandoned epoch's load
      // From here the late load's result is discarded: the worker sees
      // `abandoned` when its sample returns, and its slot is never delivered.
      b.abandoned = true;
      rebind = !slot->orphaned.exchange(true);  // already bound again for another row
      row = b.row;
      attempt = b.attempt;
    }
    if (rebind) RebindLocked(slot, row, attempt);
    // Keep the worker count: the stuck thread exits when its sample returns
    // and a new one takes its place, if a lane is free (at most num_workers
    // threads are stuck at once).
    if (b.live && !b.retired.load()) {
      auto it = std::find_if(threads_.begin(), threads_.end(),
                             [&](const std::thread& t) { return t.get_id() == b.thread_id; });
      if (it != threads_.end()) {
        b.retired.store(true);
        retired_threads_.emplace_back(static_cast<int>(lane), std::move(*it));
        threads_.erase(it);
        if (!StartThreadLocked(b.worker)) {
          // No lane free: keep the thread as a worker once its sample returns.
          b.retired.store(false);
          threads_.push_back(std::move(retired_threads_.back().second));
          retired_threads_.pop_back();
        }
      }
    }
  }
}

void Engine::RebindLocked(Slot* old_slot, int64_t row, int attempt) {
  ++orphaned_slots_;
  // Rows of the old slot nobody claimed yet are loaded in the new one.
  if (open_ == old_slot) open_ = nullptr;
  retry_.erase(std::remove(retry_.begin(), retry_.end(), old_slot), retry_.end());
  DropUnclaimedLocked(old_slot);  // cannot complete it: the late row is pending
  Slot* fresh = nullptr;
  try {
    std::vector<int> timed_out(old_slot->timed_out.begin(),
                               old_slot->timed_out.begin() + old_slot->planned_rows);
    timed_out[static_cast<size_t>(row)] = attempt + 1;
    fresh = pool_->TakeFreeLocked();
    if (fresh == nullptr) {
      pool_->GrowLocked();  // the old slot is out of use until the late load returns
      fresh = pool_->TakeFreeLocked();
    }
    BindLocked(fresh, old_slot->batch_index);
    std::copy(timed_out.begin(), timed_out.end(), fresh->timed_out.begin());
    retry_.push_back(fresh);
  } catch (...) {
    if (fresh != nullptr) pool_->PutLocked(fresh);
    InterruptLocked(std::current_exception());  // without memory the batch cannot be loaded
    return;
  }
  pool_->WakeWorkers();
}

// ---------------------------------------------------------------------------
// Workers (map-style)

bool Engine::HasWorkLocked() const {
  if (!running_) return false;
  for (const Slot* slot : retry_) {
    if (slot->claimed < slot->planned_rows) return true;
  }
  if (open_ != nullptr && open_->claimed < open_->planned_rows) return true;
  return next_bind_ < plan_.num_batches() && pool_->HasFreeLocked();
}

void Engine::EnsureRowsLocked(Slot* slot, int64_t rows) {
  const size_t n = static_cast<size_t>(rows);
  if (slot->samples.size() < n) slot->samples.resize(n);
  if (slot->indices.size() < n) slot->indices.resize(n);
  if (slot->status.size() < n) slot->status.resize(n);
  if (slot->delivered_indices.size() < n) slot->delivered_indices.resize(n);
  if (slot->timed_out.size() < n) slot->timed_out.resize(n);
  if (fixed_.empty() || rows <= slot->row_capacity) return;
  // Fixed fields occupy the first positions of the slot's field list, sized
  // for the largest batch seen; every row's Sample writes straight into them.
  if (slot->fields.size() < fixed_.size()) {
    slot->fields.resize(fixed_.size());
    for (size_t k = 0; k < fixed_.size(); ++k) slot->fields[k].name = fixed_[k].name;
  }
  for (size_t k = 0; k < fixed_.size(); ++k) {
    slot->fields[k].storage.resize(n * fixed_row_bytes_[k]);
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t k = 0; k < fixed_.size(); ++k) {
      SampleBinder::Bind(slot->samples[r], fixed_[k].name, fixed_[k].dtype, fixed_[k].shape,
                         slot->fields[k].storage.data() + r * fixed_row_bytes_[k]);
    }
  }
  slot->row_capacity = rows;
}

void Engine::BindLocked(Slot* slot, int64_t batch_index) {
  std::span<const int64_t> rows = plan_.batch(batch_index);
  EnsureRowsLocked(slot, static_cast<int64_t>(rows.size()));
  slot->epoch = epoch_;
  slot->batch_index = batch_index;
  slot->generation = generation_.load();
  slot->state = SlotState::kFilling;
  slot->planned_rows = static_cast<int64_t>(rows.size());
  slot->claimed = 0;
  slot->finished.store(0, std::memory_order_relaxed);
  slot->raise.reset();
  slot->errors.clear();
  slot->error_reasons.clear();
  slot->failed_substitutes = 0;
  slot->orphaned.store(false);
  std::copy(rows.begin(), rows.end(), slot->indices.begin());
  std::fill_n(slot->status.begin(), rows.size(), RowStatus::kPending);
  std::fill_n(slot->timed_out.begin(), rows.size(), 0);
}

bool Engine::ClaimLocked(int64_t chunk, Task* task) {
  // Batches bound again after a timeout go first: the consumer waits for them.
  while (!retry_.empty() && retry_.front()->claimed >= retry_.front()->planned_rows) {
    retry_.erase(retry_.begin());
  }
  Slot* slot = nullptr;
  if (!retry_.empty()) {
    slot = retry_.front();
  } else {
    if (open_ == nullptr || open_->claimed >= open_->planned_rows) {
      open_ = nullptr;
      if (next_bind_ >= plan_.num_batches()) return false;
      Slot* fresh = pool_->TakeFreeLocked();
      if (fresh == nullptr) return false;
      try {
        BindLocked(fresh, next_bind_);
      } catch (...) {
        pool_->PutLocked(fresh);  // std::bad_alloc sizing it: the slot stays usable
        throw;
      }
      ++next_bind_;
      open_ = fresh;
    }
    slot = open_;
  }
  const int64_t unclaimed = slot->planned_rows - slot->claimed;
  // No share is left for other workers: a chunk is sized to take ~20 us, so
  // the tail of a batch is at most that unbalanced, and cheap samples get a
  // whole batch per worker (no cross-core completion per batch).
  const int64_t n = std::min(chunk, unclaimed);
  task->slot = slot;
  task->begin = slot->claimed;
  task->end = slot->claimed + n;
  task->generation = slot->generation;
  slot->claimed += n;
  // Fully claimed (an empty batch, which a custom batch sampler may yield,
  // at once): the next claim takes another batch.
  if (slot->claimed >= slot->planned_rows) {
    if (slot == open_) {
      open_ = nullptr;
    } else {
      retry_.erase(retry_.begin());
    }
  }
  return true;
}

void Engine::FailLocked(const std::string& message) {
  FailLocked(std::make_exception_ptr(std::runtime_error(message)));
}

void Engine::FailLocked(std::exception_ptr error) {
  fatal_ = std::move(error);
  progress_.fetch_add(1, std::memory_order_release);
  ready_cv_.NotifyAll();
}

void Engine::Interrupt(std::exception_ptr error, uint64_t generation) {
  MutexLock lock(&pool_->mu());
  // Work of an abandoned epoch: nobody waits for it any more.
  if (generation != generation_.load()) return;
  InterruptLocked(std::move(error));
}

void Engine::InterruptLocked(std::exception_ptr error) {
  if (!interrupt_) interrupt_ = std::move(error);
  AbandonEpochLocked();
  progress_.fetch_add(1, std::memory_order_release);
  ready_cv_.NotifyAll();
}

void Engine::ThrowInterruptLocked() {
  if (!interrupt_) return;
  std::exception_ptr error = std::move(interrupt_);
  interrupt_ = nullptr;
  std::rethrow_exception(error);
}

bool Engine::InitWorker(int worker) {
  if (!options_.worker_init) return true;
  try {
    options_.worker_init(worker);
    return true;
  } catch (const abi::__forced_unwind&) {
    throw;  // thread cancellation must unwind
  } catch (const std::exception& e) {
    MutexLock lock(&pool_->mu());
    FailLocked("worker_init failed in worker " + std::to_string(worker) + ": " + e.what());
    return false;
  } catch (...) {  // an interrupt (KeyboardInterrupt in worker_init_fn): passed on as it is
    MutexLock lock(&pool_->mu());
    FailLocked(std::current_exception());
    return false;
  }
}

void Engine::WorkerThread(int worker, int lane) {
  WorkerMain(worker, lane);
  MutexLock lock(&pool_->mu());
  busy_[static_cast<size_t>(lane)].live = false;
}

void Engine::WorkerMain(int worker, int lane) {
  if (!InitWorker(worker)) return;
  Busy& busy = busy_[static_cast<size_t>(lane)];
  SampleContext ctx(options_.seed, 0, 0, worker);
  double ns_per_row = 0;  // moving average of this worker's cost per row
  MutexLock lock(&pool_->mu());
  while (true) {
    try {
      while (!(shutdown_ || stop_workers_ || HasWorkLocked())) pool_->WaitForWorkLocked();
      if (shutdown_ || stop_workers_) return;
      const int64_t chunk = ChunkFor(ns_per_row, kChunkTargetNs);
      Task task;
      if (!ClaimLocked(chunk, &task)) continue;
      const bool more = HasWorkLocked();
      // The task runs without the lock; an exception takes it again on the
      // way out, for the handler below.
      MutexUnlock unlock(&pool_->mu());
      if (more) pool_->WakeOneWorker();
      const int64_t t0 = NowNs();
      RunTask(task, ctx, &busy);
      const int64_t elapsed = NowNs() - t0;
      const int64_t rows = task.end - task.begin;
      if (rows > 0) {
        const double per_row = static_cast<double>(elapsed) / static_cast<double>(rows);
        ns_per_row = ns_per_row <= 0 ? per_row : 0.7 * ns_per_row + 0.3 * per_row;
      }
      stats_.AddWorker(worker, elapsed, rows);
      stats_.AddStages(ctx.DrainStageTimes());
      // Retired after a timeout: a replacement already took this worker's place.
      if (busy.retired.load()) return;
    } catch (const abi::__forced_unwind&) {
      throw;
    } catch (...) {
      // std::bad_alloc sizing a slot: the epoch ends and the consumer gets
      // it; this thread stays, for the next epoch.
      InterruptLocked(std::current_exception());
    }
  }
}

void Engine::RunTask(const Task& task, SampleContext& ctx, Busy* busy) {
  Slot* slot = task.slot;
  // Read before this task's rows count as finished: from then on another
  // thread may complete, deliver and recycle the slot.
  const int64_t planned = slot->planned_rows;
  for (int64_t row = task.begin; row < task.end; ++row) {
    if (generation_.load(std::memory_order_relaxed) != task.generation ||
        slot->orphaned.load(std::memory_order_acquire)) {
      // The epoch was abandoned, or the batch was bound again after a
      // timeout: account for the rest without loading it.
      for (int64_t r = row; r < task.end; ++r) slot->status[static_cast<size_t>(r)] = RowStatus::kCancelled;
      break;
    }
    LoadRow(slot, row, ctx, busy);
  }
  const int64_t n = task.end - task.begin;
  // acq_rel: the thread completing the batch sees every row written by the others.
  if (slot->finished.fetch_add(n, std::memory_order_acq_rel) + n == planned) {
    FinishBatch(slot, ctx);
  }
}

void Engine::LoadRow(Slot* slot, int64_t row, SampleContext& ctx, Busy* busy) {
  const size_t r = static_cast<size_t>(row);
  const int64_t original = slot->indices[r];
  // Substitutes load into this row with the same context and timeout tracking.
  struct RowLoader final : SubstituteLoader {
    RowLoader(Engine* e, Slot* s, int64_t r, SampleContext& c, Busy* b)
        : engine(e), slot(s), row(r), ctx(c), busy(b) {}
    LoadOutcome Load(int64_t index, int attempt, std::optional<SampleError>* error) override {
      return engine->LoadSample(slot, row, index, attempt, ctx, busy, error);
    }
    Engine* engine;
    Slot* slot;
    int64_t row;
    SampleContext& ctx;
    Busy* busy;
  };
  if (const int timed_out = slot->timed_out[r]; timed_out > 0) {
    // An earlier slot of this batch gave up on load `timed_out - 1` of this
    // row: it failed with "timeout", and is not loaded again.
    const int64_t index = failure_policy_.SubstituteIndex(slot->epoch, original, timed_out - 1);
    RowLoader loader(this, slot, row, ctx, busy);
    failure_policy_.HandleFailure(slot, row, failure_policy_.TimeoutFor(index), timed_out, loader);
    return;
  }
  std::optional<SampleError> error;
  switch (LoadSample(slot, row, original, 0, ctx, busy, &error)) {
    case LoadOutcome::kOk:
      slot->status[r] = RowStatus::kOk;
      return;
    case LoadOutcome::kAbandoned:
      slot->status[r] = RowStatus::kCancelled;
      return;
    case LoadOutcome::kFailed: {
      RowLoader loader(this, slot, row, ctx, busy);
      failure_policy_.HandleFailure(slot, row, std::move(*error), 1, loader);
      return;
    }
  }
}

LoadOutcome Engine::LoadSample(Slot* slot, int64_t row, int64_t index, int attempt,
                                       SampleContext& ctx, Busy* busy,
                                       std::optional<SampleError>* error) {
  Sample& sample = slot->samples[static_cast<size_t>(row)];
  sample.Clear();
  ctx.Reset(slot->epoch, index);
  const int64_t limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.timeout).count();
  int64_t start = 0;
  if (limit > 0) {
    start = NowNs();
    MutexLock guard(&busy->mu);
    busy->slot = slot;
    busy->row = row;
    busy->index = index;
    busy->attempt = attempt;
    busy->since_ns = start;
    busy->abandoned = false;
  }
  std::exception_ptr interrupt;
  try {
    dataset_->Get(index, sample, ctx);
  } catch (const abi::__forced_unwind&) {
    throw;  // thread cancellation must unwind
  } catch (const std::bad_alloc&) {
    interrupt = std::current_exception();  // out of memory is not a bad sample
  } catch (const std::exception& e) {
    error->emplace(AsSampleError(e, dataset_.get(), index));
  } catch (...) {
    // Not an exception a sample fails with (Python's KeyboardInterrupt,
    // SystemExit): it ends the epoch, whatever the policy.
    interrupt = std::current_exception();
  }
  bool abandoned = false;
  if (limit > 0) {
    MutexLock guard(&busy->mu);
    abandoned = busy->abandoned;
    busy->abandoned = false;
    busy->since_ns = -1;
  }
  if (interrupt) {
    Interrupt(std::move(interrupt), slot->generation);
    return LoadOutcome::kAbandoned;
  }
  // The consumer gave up on this load: its batch was bound again elsewhere.
  if (abandoned) return LoadOutcome::kAbandoned;
  // Late, but nobody noticed yet (or num_workers = 0, where nobody watches):
  // the result is discarded all the same, so that the outcome depends on how
  // long the sample took, not on when the consumer looked.
  if (limit > 0 && !*error && NowNs() - start > limit) {
    error->emplace(failure_policy_.TimeoutFor(index));
  }
  return *error ? LoadOutcome::kFailed : LoadOutcome::kOk;
}

void Engine::CollateSlot(Slot* slot, SampleContext& ctx) {
  // Rows that survive (all but skipped ones), compacted to the front.
  std::vector<const Sample*>& kept = slot->kept_rows;  // reused: no allocation per batch
  kept.clear();
  int64_t out = 0;
  for (int64_t r = 0; r < slot->planned_rows; ++r) {
    const size_t ur = static_cast<size_t>(r);
    if (slot->status[ur] == RowStatus::kSkipped) continue;
    if (out != r) {
      for (size_t k = 0; k < fixed_.size(); ++k) {
        std::byte* base = slot->fields[k].storage.data();
        std::memmove(base + static_cast<size_t>(out) * fixed_row_bytes_[k],
                     base + ur * fixed_row_bytes_[k], fixed_row_bytes_[k]);
      }
    }
    slot->delivered_indices[static_cast<size_t>(out)] = slot->indices[ur];
    kept.push_back(&slot->samples[ur]);
    ++out;
  }
  slot->rows = out;
  slot->ResetFields();
  if (out == 0) return;
  for (size_t k = 0; k < fixed_.size(); ++k) {
    SlotField& f = slot->FieldFor(fixed_[k].name);
    f.fixed = true;
    f.tensor = Tensor(fixed_[k].dtype, fixed_[k].shape.Prepend(out), f.storage.data());
  }
  SlotBatchBuilder builder(slot);
  auto timer = ctx.Time(Stage::kCollate);
  std::span<const Sample* const> samples(kept.data(), kept.size());
  if (options_.collate_fn) {
    options_.collate_fn(samples, builder);
  } else {
    DefaultCollate(samples, options_.collate, builder);
  }
  if (options_.error_policy == ErrorPolicy::kReplace) {
    Tensor mask = builder.Add("replaced", DType::kU8, Shape{out});
    int64_t i = 0;
    for (int64_t r = 0; r < slot->planned_rows; ++r) {
      const RowStatus s = slot->status[static_cast<size_t>(r)];
      if (s == RowStatus::kSkipped) continue;
      mask.data<uint8_t>()[i++] = s == RowStatus::kReplaced ? 1 : 0;
    }
  }
}

void Engine::CountOutcomes(Slot* slot) {
  if (slot->error_reasons.empty() && slot->failed_substitutes == 0) return;
  for (const std::string& reason : slot->error_reasons) stats_.AddError(reason);
  if (slot->failed_substitutes > 0) stats_.AddFailedSubstitutes(slot->failed_substitutes);
  for (int64_t r = 0; r < slot->planned_rows; ++r) {
    const RowStatus s = slot->status[static_cast<size_t>(r)];
    if (s == RowStatus::kSkipped) stats_.AddSkipped();
    if (s == RowStatus::kReplaced) stats_.AddReplaced();
  }
}

void Engine::FinishBatch(Slot* slot, SampleContext& ctx) {
  const bool stale = slot->generation != generation_.load() || slot->orphaned.load() ||
                     std::any_of(slot->status.begin(), slot->status.begin() + slot->planned_rows,
                                 [](RowStatus s) { return s == RowStatus::kCancelled; });
  if (!stale) {
    if (!slot->errors.empty()) {
      // Raise the error of the earliest row, as sequential loading would.
      auto first = std::min_element(slot->errors.begin(), slot->errors.end(),
                                    [](const auto& a, const auto& b) { return a.first < b.first; });
      slot->raise = first->second;
    } else {
      auto collate_failed = [&](const std::string& reason, const std::string& source,
                                const std::string& message) {
        slot->raise = SampleError(reason, source,
                                  message + " (batch " + std::to_string(slot->batch_index) + ")");
        slot->error_reasons.push_back(reason);
      };
      try {
        CollateSlot(slot, ctx);
      } catch (const abi::__forced_unwind&) {
        throw;
      } catch (const std::bad_alloc&) {
        Interrupt(std::current_exception(), slot->generation);
      } catch (const SampleError& e) {
        collate_failed(e.reason(), e.source(), e.message());  // its own prefix, once
      } catch (const std::exception& e) {
        collate_failed("collate", "", e.what());
      } catch (...) {
        Interrupt(std::current_exception(), slot->generation);  // KeyboardInterrupt in a collate_fn
      }
    }
  }
  bool wake_consumer = false;
  bool wake_workers = false;
  {
    MutexLock lock(&pool_->mu());
    if (stale || slot->generation != generation_.load() || slot->orphaned.load()) {
      if (slot->orphaned.exchange(false)) --orphaned_slots_;
      pool_->PutLocked(slot);  // a free slot is new work
      pool_->ShrinkLocked();
      wake_workers = pool_->workers_waiting_locked();
    } else {
      CountOutcomes(slot);
      slot->state = SlotState::kReady;
      progress_.fetch_add(1, std::memory_order_release);
      if (iterable_) ++produced_[static_cast<size_t>(slot->producer)];
      wake_consumer = consumer_waiting_ > 0;
    }
  }
  if (wake_consumer) ready_cv_.NotifyOne();
  if (wake_workers) pool_->WakeWorkers();
}

}  // namespace feedline::internal
