#include "src/loader/engine.h"

#include <algorithm>
#include <cxxabi.h>
#include <new>
#include <optional>
#include <string>

#include "feedline/error.h"

// The engine's IterableDataset side: each worker reads its own stream and
// fills whole batches, delivered round-robin over the workers.
namespace feedline::internal {

void Engine::FillFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx,
                            bool* exhausted) {
  const int64_t want = options_.batch_size;
  const int64_t limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.timeout).count();
  int64_t rows = 0;
  while (rows < want) {
    if (generation_.load() != slot->generation || shutdown_) break;
    Sample& sample = slot->samples[static_cast<size_t>(rows)];
    sample.Clear();
    ctx.Reset(slot->epoch, slot->producer_seq * want + rows);
    bool got = false;
    std::optional<SampleError> failure;
    const int64_t start = limit > 0 ? NowNs() : 0;
    try {
      got = stream.Next(sample, ctx);
    } catch (const abi::__forced_unwind&) {
      throw;
    } catch (const std::bad_alloc&) {
      Interrupt(std::current_exception(), slot->generation);  // out of memory ends the epoch
      break;
    } catch (const std::exception& e) {
      failure = AsSampleError(e, nullptr, -1);
    } catch (...) {
      Interrupt(std::current_exception(), slot->generation);  // KeyboardInterrupt and the like
      break;
    }
    // A stream cannot be read past an item that never returns, so its
    // timeout is checked when the item returns: a late item is discarded.
    if (!failure && got && limit > 0 && NowNs() - start > limit) {
      failure = TimeoutError(ctx.index(), "", static_cast<double>(options_.timeout.count()) / 1000.0);
    }
    if (failure) {
      SampleError error = std::move(*failure);
      stats_.AddError(error.reason());
      if (options_.error_policy == ErrorPolicy::kRaise) {
        std::lock_guard<std::mutex> lock(slot->error_mu);
        slot->errors.emplace_back(rows, error);
        break;
      }
      // A stream has no substitute to offer: skip and replace both drop it.
      stats_.AddSkipped();
      continue;
    }
    if (!got) {
      *exhausted = true;
      break;
    }
    slot->indices[static_cast<size_t>(rows)] = slot->producer_seq * want + rows;
    slot->status[static_cast<size_t>(rows)] = RowStatus::kOk;
    ++rows;
  }
  slot->planned_rows = rows;
  if (*exhausted && options_.drop_last && rows < want) slot->planned_rows = 0;
}

void Engine::IterableWorkerMain(int worker) {
  if (!InitWorker(worker)) return;
  SampleContext ctx(options_.seed, 0, 0, worker);
  std::unique_ptr<SampleStream> stream;
  uint64_t generation = 0;
  int64_t epoch = 0;
  {
    MutexLock lock(&pool_->mu());
    generation = generation_.load();
    epoch = epoch_;
  }
  try {
    stream = iterable_->Open(worker, options_.num_workers, epoch);
  } catch (const abi::__forced_unwind&) {
    throw;
  } catch (const std::exception& e) {
    MutexLock lock(&pool_->mu());
    FailLocked("opening the stream of worker " + std::to_string(worker) + " failed: " + e.what());
    return;
  } catch (...) {  // KeyboardInterrupt in iter(dataset)
    MutexLock lock(&pool_->mu());
    InterruptLocked(std::current_exception());
    return;
  }
  MutexLock lock(&pool_->mu());
  const size_t w = static_cast<size_t>(worker);
  while (true) {
    // Each worker keeps at most prefetch_factor undelivered batches, so a
    // slow worker's turn in the round-robin always finds a slot.
    while (!(shutdown_ || stop_workers_ || generation_.load() != generation ||
             (pool_->HasFreeLocked() &&
              produced_[w] - consumed_[w] < options_.prefetch_factor))) {
      pool_->WaitForWorkLocked();
    }
    if (shutdown_ || stop_workers_ || generation_.load() != generation) return;
    Slot* slot = nullptr;
    try {
      slot = TakeStreamSlotLocked(worker, epoch, generation);
    } catch (const std::exception&) {
      InterruptLocked(std::current_exception());  // sizing the slot: the epoch ends
      return;
    }
    if (ProduceFromStream(*stream, slot, ctx, worker)) {
      exhausted_[w] = true;
      progress_.fetch_add(1, std::memory_order_release);
      ready_cv_.NotifyAll();
      return;
    }
  }
}

Slot* Engine::TakeStreamSlotLocked(int producer, int64_t epoch, uint64_t generation) {
  Slot* slot = pool_->TakeFreeLocked();
  try {
    EnsureRowsLocked(slot, options_.batch_size);
  } catch (...) {
    pool_->PutLocked(slot);
    throw;
  }
  const size_t p = static_cast<size_t>(producer);
  slot->epoch = epoch;
  slot->generation = generation;
  slot->producer = producer;
  slot->producer_seq = produced_[p];
  slot->batch_index = produced_[p];
  slot->state = SlotState::kFilling;
  slot->raise.reset();
  slot->errors.clear();
  return slot;
}

bool Engine::ProduceFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx,
                               int worker) {
  bool exhausted = false;
  bool published = false;
  {
    MutexUnlock unlock(&pool_->mu());
    const int64_t t0 = NowNs();
    FillFromStream(stream, slot, ctx, &exhausted);
    stats_.AddWorker(worker, NowNs() - t0, slot->planned_rows);
    published = slot->planned_rows > 0 || !slot->errors.empty();
    if (published) FinishBatch(slot, ctx);  // marks it ready and counts it as produced
  }
  if (!published) pool_->PutLocked(slot);
  stats_.AddStages(ctx.DrainStageTimes());
  return exhausted;
}

std::optional<Batch> Engine::NextIterable(std::optional<Clock::time_point> deadline,
                                          bool* pending) {
  MutexLock lock(&pool_->mu());
  const int workers = std::max(1, options_.num_workers);
  ThrowInterruptLocked();
  if (!running_) {
    epoch_ = next_epoch_++;
    running_ = true;
    generation_.fetch_add(1);
    produced_.assign(static_cast<size_t>(workers), 0);
    consumed_.assign(static_cast<size_t>(workers), 0);
    exhausted_.assign(static_cast<size_t>(workers), false);
    rr_next_ = 0;
    delivered_ = 0;
    if (options_.num_workers > 0) {
      StopWorkers();  // the previous epoch's threads, if any
      StartWorkers();
    }
  }
  int64_t wait_start = -1;
  while (true) {
    if (fatal_) std::rethrow_exception(fatal_);
    ThrowInterruptLocked();
    // Find the next worker in round-robin order that can still deliver.
    bool any_left = false;
    for (int k = 0; k < workers; ++k) {
      const size_t w = static_cast<size_t>((rr_next_ + k) % workers);
      if (exhausted_[w] && consumed_[w] == produced_[w]) continue;
      any_left = true;
      rr_next_ = static_cast<int>(w);
      break;
    }
    if (!any_left) {
      running_ = false;
      if (wait_start >= 0) stats_.AddWait(NowNs() - wait_start);
      StopWorkers();
      return std::nullopt;
    }
    const size_t w = static_cast<size_t>(rr_next_);
    Slot* ready = nullptr;
    for (const auto& slot : pool_->slots_locked()) {
      Slot* s = slot.get();
      if (s->state == SlotState::kReady && s->generation == generation_.load() &&
          s->producer == rr_next_ && s->producer_seq == consumed_[w]) {
        ready = s;
        break;
      }
    }
    if (ready != nullptr) {
      if (wait_start >= 0) stats_.AddWait(NowNs() - wait_start);
      wait_start = -1;
      ++consumed_[w];
      rr_next_ = (rr_next_ + 1) % workers;
      pool_->WakeWorkers();
      std::optional<Batch> batch = DeliverLocked(ready);
      if (batch) return batch;
      continue;
    }
    GrowIfCallerHoldsEverySlotLocked();
    if (wait_start < 0) wait_start = NowNs();
    if (options_.num_workers == 0) {
      if (!main_stream_) main_stream_ = iterable_->Open(0, 1, epoch_);
      Slot* slot = TakeStreamSlotLocked(0, epoch_, generation_.load());
      if (ProduceFromStream(*main_stream_, slot, caller_ctx_, 0)) {
        exhausted_[0] = true;
        main_stream_.reset();
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

}  // namespace feedline::internal
