#include "src/loader/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "feedline/rng.h"
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
// Stream id of the generator that picks substitutes for failed samples.
constexpr uint64_t kReplaceStream = 0x7265706c61636500ull;

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
  busy_ = std::vector<Busy>(static_cast<size_t>(std::max(1, options_.num_workers)));
}

Engine::Engine(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options)
    : iterable_(std::move(dataset)),
      options_(std::move(options)),
      stats_(options_.num_workers),
      caller_ctx_(options_.seed, 0, 0, -1) {
  if (!iterable_) throw Error("DataLoader: dataset must not be null");
  ValidateOptions();
  if (options_.sampler || options_.batch_sampler || options_.shuffle) {
    throw Error("DataLoader: an IterableDataset takes no sampler, batch_sampler or shuffle");
  }
  pool_ = std::make_shared<SlotPool>(SlotCapacity());
  busy_ = std::vector<Busy>(static_cast<size_t>(std::max(1, options_.num_workers)));
}

Engine::~Engine() {
  std::unique_lock<std::mutex> lock(pool_->mu);
  shutdown_.store(true);
  generation_.fetch_add(1);
  running_ = false;
  StopWorkers(lock);
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
  std::lock_guard<std::mutex> lock(pool_->mu);
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
  std::lock_guard<std::mutex> lock(pool_->mu);
  return running_ ? epoch_ : next_epoch_;
}

LoaderState Engine::state() const {
  std::lock_guard<std::mutex> lock(pool_->mu);
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
  std::unique_lock<std::mutex> lock(pool_->mu);
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
    std::lock_guard<std::mutex> lock(pool_->mu);
    if (resume_pending_) {
      resume_pending_ = false;
      return;
    }
  }
  Reset();
}

void Engine::Reset() {
  std::unique_lock<std::mutex> lock(pool_->mu);
  resume_pending_ = false;
  AbandonEpochLocked();
  main_stream_.reset();
  if (!options_.persistent_workers || iterable_) StopWorkers(lock);
}

// ---------------------------------------------------------------------------
// Epochs

void Engine::StartEpochLocked(int64_t epoch, int64_t first_batch) {
  const std::optional<int64_t> pinned = batch_sampler_->pinned_epoch();
  epoch_ = pinned ? *pinned : epoch;
  next_epoch_ = epoch + 1;
  plan_ = batch_sampler_->Plan(epoch_);
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
  pool_->work_cv.notify_all();
}

void Engine::AbandonEpochLocked() {
  if (!running_) return;
  running_ = false;
  open_ = nullptr;
  generation_.fetch_add(1);
  // Ready batches of the abandoned epoch go straight back; slots still being
  // filled are returned by the worker that finishes them.
  for (const auto& slot : pool_->slots_locked()) {
    if (slot->state == SlotState::kReady) pool_->PutLocked(slot.get());
  }
  pool_->work_cv.notify_all();
}

void Engine::StartWorkers() {
  stop_workers_ = false;
  for (int w = 0; w < options_.num_workers; ++w) {
    if (iterable_) {
      threads_.emplace_back(&Engine::IterableWorkerMain, this, w);
    } else {
      threads_.emplace_back(&Engine::WorkerMain, this, w);
    }
  }
}

void Engine::StopWorkers(std::unique_lock<std::mutex>& lock) {
  if (threads_.empty()) return;
  stop_workers_ = true;
  std::vector<std::thread> threads;
  threads.swap(threads_);
  lock.unlock();
  pool_->work_cv.notify_all();
  for (std::thread& t : threads) t.join();
  lock.lock();
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
    pool_->work_cv.notify_all();
    throw error;
  }
  if (slot->rows == 0) {  // every sample skipped
    pool_->PutLocked(slot);
    pool_->work_cv.notify_all();
    return std::nullopt;
  }
  pool_->MarkDeliveredLocked(slot);
  stats_.AddBatch();
  stats_.MarkFirstBatch();
  return Batch(pool_, slot);
}

void Engine::GrowIfCallerHoldsEverySlotLocked() {
  if (!pool_->HasFreeLocked() &&
      pool_->delivered_count_locked() == pool_->capacity() + pool_->grown_locked()) {
    pool_->GrowLocked();  // nothing can be loaded otherwise: make one more slot
    pool_->work_cv.notify_all();
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
  std::unique_lock<std::mutex> lock(pool_->mu);
  resume_pending_ = false;  // a restored epoch, once consumed, is an ordinary one
  if (!running_) StartEpochLocked(next_epoch_, 0);
  int64_t wait_start = -1;
  while (true) {
    if (fatal_) std::rethrow_exception(fatal_);
    if (delivered_ >= plan_.num_batches()) {
      running_ = false;
      if (!options_.persistent_workers) StopWorkers(lock);
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
      // Load the next batch in this thread.
      Task task;
      if (!ClaimLocked(kMaxChunk * 1024, &task)) continue;
      lock.unlock();
      const int64_t t0 = NowNs();
      RunTask(task, caller_ctx_, -1);
      stats_.AddWorker(0, NowNs() - t0, task.end - task.begin);
      stats_.AddStages(caller_ctx_.DrainStageTimes());
      lock.lock();
      continue;
    }
    if (!WaitForBatchLocked(lock, deadline)) {
      stats_.AddWait(NowNs() - wait_start);
      *pending = true;
      return std::nullopt;
    }
  }
}

bool Engine::WaitForBatchLocked(std::unique_lock<std::mutex>& lock,
                                std::optional<Clock::time_point> deadline) {
  if (deadline && Clock::now() >= *deadline) return false;
  // A batch usually completes within microseconds of the last: poll briefly
  // (yielding the core to the workers) before paying for a futex sleep and
  // the wake-up a worker would have to send.
  const uint64_t seen = progress_.load(std::memory_order_acquire);
  lock.unlock();
  for (int spin = 0; spin < kConsumerPolls; ++spin) {
    if (progress_.load(std::memory_order_acquire) != seen) break;
    std::this_thread::yield();
  }
  lock.lock();
  // progress_ only changes under the lock, so this predicate cannot miss a
  // change made while the lock was dropped for polling.
  auto moved = [&] { return progress_.load(std::memory_order_relaxed) != seen; };
  if (moved()) return true;
  ++pool_->consumer_waiting;
  if (options_.timeout.count() > 0) {
    // Wake up regularly to look for a sample past the timeout.
    auto until = Clock::now() + std::min<std::chrono::milliseconds>(options_.timeout,
                                                                    std::chrono::milliseconds(50));
    if (deadline && *deadline < until) until = *deadline;
    pool_->ready_cv.wait_until(lock, until, moved);
    --pool_->consumer_waiting;
    if (dataset_) CheckTimeoutsLocked();
  } else if (deadline) {
    pool_->ready_cv.wait_until(lock, *deadline, moved);
    --pool_->consumer_waiting;
  } else {
    pool_->ready_cv.wait(lock, moved);
    --pool_->consumer_waiting;
  }
  return true;
}

void Engine::CheckTimeoutsLocked() {
  const int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.timeout).count();
  const int64_t now = NowNs();
  for (Busy& b : busy_) {
    const int64_t since = b.since_ns.load();
    if (since >= 0 && now - since > limit) {
      const int64_t index = b.index.load();
      std::string source;
      try {
        if (dataset_) source = dataset_->Source(index);
      } catch (...) {
      }
      stats_.AddError("timeout");
      throw TimeoutError(index, source, static_cast<double>(options_.timeout.count()) / 1000.0);
    }
  }
}

// ---------------------------------------------------------------------------
// Workers (map-style)

bool Engine::HasWorkLocked() const {
  if (!running_) return false;
  if (open_ != nullptr && open_->claimed < open_->planned_rows) return true;
  return next_bind_ < plan_.num_batches() && pool_->HasFreeLocked();
}

void Engine::EnsureRowsLocked(Slot* slot, int64_t rows) {
  const size_t n = static_cast<size_t>(rows);
  if (slot->samples.size() < n) slot->samples.resize(n);
  if (slot->indices.size() < n) slot->indices.resize(n);
  if (slot->status.size() < n) slot->status.resize(n);
  if (slot->delivered_indices.size() < n) slot->delivered_indices.resize(n);
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
  std::copy(rows.begin(), rows.end(), slot->indices.begin());
  std::fill_n(slot->status.begin(), rows.size(), RowStatus::kPending);
}

bool Engine::ClaimLocked(int64_t chunk, Task* task) {
  if (open_ == nullptr || open_->claimed >= open_->planned_rows) {
    open_ = nullptr;
    if (next_bind_ >= plan_.num_batches()) return false;
    Slot* slot = pool_->TakeFreeLocked();
    if (slot == nullptr) return false;
    BindLocked(slot, next_bind_++);
    open_ = slot;
  }
  Slot* slot = open_;
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
  if (slot->claimed >= slot->planned_rows) open_ = nullptr;
  // An empty batch (a custom batch sampler may yield one) completes at once.
  if (slot->planned_rows == 0) open_ = nullptr;
  return true;
}

void Engine::FailLocked(const std::string& message) {
  fatal_ = std::make_exception_ptr(std::runtime_error(message));
  progress_.fetch_add(1, std::memory_order_release);
  pool_->ready_cv.notify_all();
}

bool Engine::InitWorker(int worker) {
  if (!options_.worker_init) return true;
  try {
    options_.worker_init(worker);
    return true;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(pool_->mu);
    FailLocked("worker_init failed in worker " + std::to_string(worker) + ": " + e.what());
    return false;
  }
}

void Engine::WorkerMain(int worker) {
  if (!InitWorker(worker)) return;
  SampleContext ctx(options_.seed, 0, 0, worker);
  double ns_per_row = 0;  // moving average of this worker's cost per row
  std::unique_lock<std::mutex> lock(pool_->mu);
  while (true) {
    ++pool_->workers_waiting;
    pool_->work_cv.wait(lock, [&] { return shutdown_ || stop_workers_ || HasWorkLocked(); });
    --pool_->workers_waiting;
    if (shutdown_ || stop_workers_) return;
    const int64_t chunk =
        ns_per_row <= 0 ? 1
                        : std::clamp<int64_t>(static_cast<int64_t>(kChunkTargetNs / ns_per_row), 1,
                                              kMaxChunk);
    Task task;
    if (!ClaimLocked(chunk, &task)) continue;
    const bool more = HasWorkLocked();
    lock.unlock();
    if (more) pool_->work_cv.notify_one();
    const int64_t t0 = NowNs();
    RunTask(task, ctx, worker);
    const int64_t elapsed = NowNs() - t0;
    const int64_t rows = task.end - task.begin;
    if (rows > 0) {
      const double per_row = static_cast<double>(elapsed) / static_cast<double>(rows);
      ns_per_row = ns_per_row <= 0 ? per_row : 0.7 * ns_per_row + 0.3 * per_row;
    }
    stats_.AddWorker(worker, elapsed, rows);
    stats_.AddStages(ctx.DrainStageTimes());
    lock.lock();
  }
}

void Engine::RunTask(const Task& task, SampleContext& ctx, int worker) {
  Slot* slot = task.slot;
  // Read before this task's rows count as finished: from then on another
  // thread may complete, deliver and recycle the slot.
  const int64_t planned = slot->planned_rows;
  Busy& busy = busy_[static_cast<size_t>(worker < 0 ? 0 : worker)];
  const bool timed = options_.timeout.count() > 0;
  for (int64_t row = task.begin; row < task.end; ++row) {
    if (generation_.load(std::memory_order_relaxed) != task.generation) {
      // The epoch was abandoned: account for the rest without loading it.
      for (int64_t r = row; r < task.end; ++r) slot->status[static_cast<size_t>(r)] = RowStatus::kCancelled;
      break;
    }
    if (timed) {
      busy.index.store(slot->indices[static_cast<size_t>(row)]);
      busy.since_ns.store(NowNs());
    }
    LoadRow(slot, row, ctx);
    if (timed) busy.since_ns.store(-1);
  }
  const int64_t n = task.end - task.begin;
  // acq_rel: the thread completing the batch sees every row written by the others.
  if (slot->finished.fetch_add(n, std::memory_order_acq_rel) + n == planned) {
    FinishBatch(slot, ctx);
  }
}

void Engine::LoadRow(Slot* slot, int64_t row, SampleContext& ctx) {
  const size_t r = static_cast<size_t>(row);
  const int64_t index = slot->indices[r];
  Sample& sample = slot->samples[r];
  sample.Clear();
  ctx.Reset(slot->epoch, index);
  try {
    dataset_->Get(index, sample, ctx);
    slot->status[r] = RowStatus::kOk;
  } catch (const std::exception& e) {
    HandleFailure(slot, row, ctx, AsSampleError(e, dataset_.get(), index));
  }
}

void Engine::HandleFailure(Slot* slot, int64_t row, SampleContext& ctx, SampleError error) {
  const size_t r = static_cast<size_t>(row);
  const int64_t original = slot->indices[r];
  Sample& sample = slot->samples[r];
  for (int attempt = 1;; ++attempt) {
    stats_.AddError(error.reason());
    if (options_.error_policy == ErrorPolicy::kSkip) {
      slot->status[r] = RowStatus::kSkipped;
      stats_.AddSkipped();
      return;
    }
    if (options_.error_policy == ErrorPolicy::kRaise || attempt >= options_.max_replace_attempts) {
      if (options_.error_policy == ErrorPolicy::kReplace) {
        error = SampleError(error.reason(), error.source(),
                            error.message() + " (and " + std::to_string(attempt - 1) +
                                " substitutes for sample " + std::to_string(original) +
                                " failed too)",
                            error.index());
      }
      slot->status[r] = RowStatus::kFailed;
      std::lock_guard<std::mutex> lock(slot->error_mu);
      slot->errors.emplace_back(row, error);
      return;
    }
    // The substitute depends only on (seed, epoch, original index, attempt),
    // so a replaced batch is the same on every run and worker count.
    Rng pick(options_.seed, static_cast<uint64_t>(slot->epoch), static_cast<uint64_t>(original),
             kReplaceStream + static_cast<uint64_t>(attempt));
    const int64_t index =
        static_cast<int64_t>(pick.UniformInt(static_cast<uint64_t>(dataset_->size())));
    sample.Clear();
    ctx.Reset(slot->epoch, index);
    try {
      dataset_->Get(index, sample, ctx);
      slot->indices[r] = index;
      slot->status[r] = RowStatus::kReplaced;
      stats_.AddReplaced();
      return;
    } catch (const std::exception& e) {
      error = AsSampleError(e, dataset_.get(), index);
    }
  }
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

void Engine::FinishBatch(Slot* slot, SampleContext& ctx) {
  const bool stale = slot->generation != generation_.load() ||
                     std::any_of(slot->status.begin(), slot->status.begin() + slot->planned_rows,
                                 [](RowStatus s) { return s == RowStatus::kCancelled; });
  if (!stale) {
    if (!slot->errors.empty()) {
      // Raise the error of the earliest row, as sequential loading would.
      auto first = std::min_element(slot->errors.begin(), slot->errors.end(),
                                    [](const auto& a, const auto& b) { return a.first < b.first; });
      slot->raise = first->second;
    } else {
      try {
        CollateSlot(slot, ctx);
      } catch (const std::exception& e) {
        slot->raise = SampleError("collate", "",
                                  std::string(e.what()) + " (batch " +
                                      std::to_string(slot->batch_index) + ")");
        stats_.AddError("collate");
      }
    }
  }
  bool wake_consumer = false;
  bool wake_workers = false;
  {
    std::lock_guard<std::mutex> lock(pool_->mu);
    if (stale || slot->generation != generation_.load()) {
      pool_->PutLocked(slot);  // a free slot is new work
      wake_workers = pool_->workers_waiting > 0;
    } else {
      slot->state = SlotState::kReady;
      progress_.fetch_add(1, std::memory_order_release);
      if (iterable_) ++produced_[static_cast<size_t>(slot->producer)];
      wake_consumer = pool_->consumer_waiting > 0;
    }
  }
  if (wake_consumer) pool_->ready_cv.notify_one();
  if (wake_workers) pool_->work_cv.notify_all();
}

}  // namespace feedline::internal
