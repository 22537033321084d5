#include "src/loader/iterable_producer.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/core/sample_context_access.h"
#include "src/loader/exception_kind.h"

namespace feedline::internal {

IterableProducer::IterableProducer(const LoaderOptions& options,
                                   std::shared_ptr<const IterableDataset> dataset,
                                   const SlotLayout* layout, Scheduler* scheduler,
                                   BatchFiller* filler, StatsCollector* stats)
    : options_(options),
      dataset_(std::move(dataset)),
      layout_(layout),
      scheduler_(scheduler),
      filler_(filler),
      stats_(stats),
      caller_ctx_(options.seed, 0, 0, -1),
      streams_(std::max(1, options.num_workers)),
      quota_(options.prefetch_factor) {}

bool IterableProducer::AwaitedWorkerStarvedLocked(int worker) const {
  if (scheduler_->HasFreeSlotLocked()) return false;
  return scheduler_->FindSlotLocked([worker](const Slot& slot) {
           return slot.state == SlotState::kFilling && slot.producer == worker;
         }) == nullptr;
}

void IterableProducer::Reset() {
  std::unique_ptr<SampleStream> ended;  // destroyed after the lock is dropped
  MutexLock lock(&scheduler_->mu());
  // A stream's workers open their streams at the start of an epoch: they
  // always stop.
  scheduler_->ResetLocked(/*stop_workers=*/true);
  ended = std::move(main_stream_);
}

void IterableProducer::SetSlotLimit(int n) {
  MutexLock lock(&scheduler_->mu());
  // Each worker's turn in the round-robin needs a slot of its own.
  n = std::max(n, streams_);
  quota_ = std::max(1, n / streams_);
  scheduler_->WakeWorkers();
  scheduler_->SetSlotLimitLocked(n);
}

void IterableProducer::FillFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx,
                                      bool* exhausted) {
  const int64_t want = options_.batch_size;
  const int64_t limit =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.timeout).count();
  int64_t rows = 0;
  while (rows < want) {
    if (scheduler_->generation() != slot->generation ||
        scheduler_->WorkersShuttingDown()) {
      break;
    }
    Sample& sample = slot->samples[static_cast<size_t>(rows)];
    sample.Clear();
    SampleContextAccess::Reset(ctx, slot->epoch, slot->batch_index * want + rows);
    bool got = false;
    std::optional<SampleError> failure;
    const int64_t start = limit > 0 ? NowNs() : 0;
    try {
      got = stream.Next(sample, ctx);
    } catch (...) {
      const CaughtException caught = SortCurrentException();
      if (caught.kind == ExceptionKind::kOutOfMemory || caught.kind == ExceptionKind::kInterrupt) {
        // Out of memory, KeyboardInterrupt and the like end the epoch.
        scheduler_->Interrupt(std::current_exception(), slot->generation);
        break;
      }
      failure = AsSampleError(*caught.exception, nullptr, -1);
    }
    // A stream cannot be read past an item that never returns, so its
    // timeout is checked when the item returns: a late item is discarded.
    if (!failure && got && limit > 0 && NowNs() - start > limit) {
      failure = TimeoutError(ctx.index(), "",
                             static_cast<double>(options_.timeout.count()) / 1000.0);
    }
    if (failure) {
      SampleError error = std::move(*failure);
      stats_->AddError(error.reason());
      if (options_.error_policy == ErrorPolicy::kRaise) {
        std::lock_guard<std::mutex> lock(slot->error_mu);
        slot->errors.emplace_back(rows, error);
        break;
      }
      // A stream has no substitute to offer: skip and replace both drop it.
      stats_->AddSkipped();
      continue;
    }
    if (!got) {
      *exhausted = true;
      break;
    }
    slot->indices[static_cast<size_t>(rows)] = slot->batch_index * want + rows;
    slot->status[static_cast<size_t>(rows)] = RowStatus::kOk;
    ++rows;
  }
  slot->planned_rows = rows;
  if (*exhausted && options_.drop_last && rows < want) slot->planned_rows = 0;
}

std::unique_ptr<SampleStream> IterableProducer::OpenStream(int worker, int64_t epoch) {
  try {
    return dataset_->Open(worker, options_.num_workers, epoch);
  } catch (...) {
    const CaughtException caught = SortCurrentException();
    MutexLock lock(&scheduler_->mu());
    switch (caught.kind) {
      case ExceptionKind::kSampleError: {
        // The dataset's own failure (a Python __iter__ that raised): kept a
        // SampleError, so the binding can raise the dataset's exception type.
        const SampleError& e = caught.sample_error();
        scheduler_->FailLocked(std::make_exception_ptr(SampleError(
            e.kind(), e.source(),
            "opening the stream of worker " + std::to_string(worker) + ": " + e.message(), -1,
            e.origin())));
        break;
      }
      case ExceptionKind::kOutOfMemory:
      case ExceptionKind::kException:
        scheduler_->FailLocked(std::make_exception_ptr(
            std::runtime_error("opening the stream of worker " + std::to_string(worker) +
                               " failed: " + caught.exception->what())));
        break;
      case ExceptionKind::kInterrupt:  // KeyboardInterrupt in iter(dataset)
        scheduler_->InterruptLocked(std::current_exception());
        break;
    }
    return nullptr;
  }
}

void IterableProducer::RunWorker(int worker, WorkerLane&) {
  SampleContext ctx(options_.seed, 0, 0, worker);
  uint64_t generation = 0;
  int64_t epoch = 0;
  {
    MutexLock lock(&scheduler_->mu());
    generation = scheduler_->generation();
    epoch = scheduler_->epoch_locked();
  }
  const std::unique_ptr<SampleStream> stream = OpenStream(worker, epoch);
  if (!stream) return;
  MutexLock lock(&scheduler_->mu());
  const size_t w = static_cast<size_t>(worker);
  while (true) {
    // Each worker keeps at most quota_ undelivered batches, so a slow
    // worker's turn in the round-robin always finds a slot.
    while (!(scheduler_->WorkersStoppingLocked() || scheduler_->generation() != generation ||
             (scheduler_->HasFreeSlotLocked() && produced_[w] - consumed_[w] < quota_))) {
      scheduler_->WaitAsStreamWorkerLocked();
    }
    if (scheduler_->WorkersStoppingLocked() || scheduler_->generation() != generation) return;
    Slot* slot = nullptr;
    try {
      slot = TakeStreamSlotLocked(worker, epoch, generation);
    } catch (const std::exception&) {
      scheduler_->InterruptLocked(std::current_exception());  // sizing the slot: the epoch ends
      return;
    }
    if (ProduceFromStream(*stream, slot, ctx, worker)) {
      exhausted_[w] = true;
      scheduler_->NotifyConsumerLocked();
      return;
    }
  }
}

Slot* IterableProducer::TakeStreamSlotLocked(int producer, int64_t epoch, uint64_t generation) {
  Slot* slot = scheduler_->TakeFreeSlotLocked();
  try {
    layout_->EnsureRows(slot, options_.batch_size);
  } catch (...) {
    scheduler_->PutSlotLocked(slot);
    throw;
  }
  const size_t p = static_cast<size_t>(producer);
  slot->epoch = epoch;
  slot->generation = generation;
  slot->producer = producer;
  slot->batch_index = produced_[p];
  slot->state = SlotState::kFilling;
  slot->raise.reset();
  slot->errors.clear();
  return slot;
}

bool IterableProducer::ProduceFromStream(SampleStream& stream, Slot* slot, SampleContext& ctx,
                                         int worker) {
  bool exhausted = false;
  bool published = false;
  bool ready = false;
  // Once Complete makes the slot ready it belongs to the consumer, who may
  // deliver it, see it released and hand it to another worker before this
  // thread takes the lock back: its producer and generation are read now.
  const size_t producer = static_cast<size_t>(slot->producer);
  const uint64_t generation = slot->generation;
  {
    MutexUnlock unlock(&scheduler_->mu());
    const int64_t t0 = NowNs();
    FillFromStream(stream, slot, ctx, &exhausted);
    stats_->AddWorker(worker, NowNs() - t0, slot->planned_rows);
    published = slot->planned_rows > 0 || !slot->errors.empty();
    if (published) ready = filler_->FinishBatch(slot, ctx);
  }
  // A new epoch may have reset the counts meanwhile: this batch is not its.
  if (ready && scheduler_->generation() == generation) ++produced_[producer];
  if (!published) scheduler_->PutSlotLocked(slot);
  stats_->DrainContext(ctx);
  return exhausted;
}

void IterableProducer::BeginTakeLocked() {
  scheduler_->ThrowInterruptLocked();
  if (scheduler_->EpochRunningLocked()) return;
  scheduler_->StartStreamEpochLocked();
  produced_.assign(static_cast<size_t>(streams_), 0);
  consumed_.assign(static_cast<size_t>(streams_), 0);
  exhausted_.assign(static_cast<size_t>(streams_), false);
  rr_next_ = 0;
  scheduler_->RestartWorkersLocked();
}

bool IterableProducer::FindTurnLocked() {
  for (int k = 0; k < streams_; ++k) {
    const size_t w = static_cast<size_t>((rr_next_ + k) % streams_);
    if (exhausted_[w] && consumed_[w] == produced_[w]) continue;
    rr_next_ = static_cast<int>(w);
    return true;
  }
  return false;
}

Slot* IterableProducer::TakeTurnLocked() {
  const size_t w = static_cast<size_t>(rr_next_);
  const int producer = rr_next_;
  const int64_t batch = consumed_[w];
  Slot* ready = scheduler_->FindSlotLocked([producer, batch](const Slot& slot) {
    return slot.state == SlotState::kReady && slot.producer == producer &&
           slot.batch_index == batch;
  });
  if (ready == nullptr) return nullptr;
  ++consumed_[w];
  rr_next_ = (rr_next_ + 1) % streams_;
  scheduler_->WakeWorkers();
  return ready;
}

void IterableProducer::MakeRoomLocked() {
  scheduler_->GrowIfCallerHoldsEverySlotLocked();
  // The awaited worker's batch comes first in the round-robin: if the
  // slots are all taken by kept batches and by other workers' batches
  // waiting behind it, it gets one more (list(loader) over a stream).
  if (scheduler_->has_workers() && AwaitedWorkerStarvedLocked(rr_next_)) {
    scheduler_->GrowSlotsLocked();
  }
}

void IterableProducer::ProduceInCallerLocked() {
  const int64_t epoch = scheduler_->epoch_locked();
  const uint64_t generation = scheduler_->generation();
  if (!main_stream_) {
    // Opened without the lock, as it is dropped (DropStreamLocked).
    std::unique_ptr<SampleStream> opened;
    {
      MutexUnlock unlocked(&scheduler_->mu());
      opened = dataset_->Open(0, 1, epoch);
    }
    if (scheduler_->generation() != generation) {  // reset meanwhile: not this epoch's
      DropStreamLocked(std::move(opened));
      return;
    }
    main_stream_ = std::move(opened);
  }
  Slot* slot = TakeStreamSlotLocked(0, epoch, generation);
  if (ProduceFromStream(*main_stream_, slot, caller_ctx_, 0)) {
    exhausted_[0] = true;
    DropStreamLocked(std::move(main_stream_));
  }
}

void IterableProducer::DropStreamLocked(std::unique_ptr<SampleStream> stream) {
  MutexUnlock unlocked(&scheduler_->mu());
  stream.reset();
}

bool IterableProducer::WaitForTurnLocked(std::optional<Clock::time_point> deadline) {
  // With a timeout the consumer wakes regularly, as in map-style loading
  // (a stream's late items are discarded by the worker when they return).
  std::optional<std::chrono::milliseconds> wake_after;
  if (options_.timeout.count() > 0) {
    wake_after =
        std::min<std::chrono::milliseconds>(options_.timeout, std::chrono::milliseconds(50));
  }
  return scheduler_->WaitForProgressLocked(deadline, wake_after);
}

std::optional<Batch> IterableProducer::Next(std::optional<Clock::time_point> deadline,
                                            bool* pending) {
  MutexLock lock(&scheduler_->mu());
  BeginTakeLocked();
  int64_t wait_start = -1;
  while (true) {
    scheduler_->ThrowPendingLocked();
    if (!FindTurnLocked()) {  // every stream ended and was delivered
      if (wait_start >= 0) stats_->AddWait(NowNs() - wait_start);
      scheduler_->FinishEpochLocked(/*stop_workers=*/true);
      return std::nullopt;
    }
    if (Slot* ready = TakeTurnLocked()) {
      if (wait_start >= 0) stats_->AddWait(NowNs() - wait_start);
      wait_start = -1;
      std::optional<Batch> batch = scheduler_->DeliverLocked(ready);
      if (batch) return batch;
      continue;
    }
    MakeRoomLocked();
    if (wait_start < 0) wait_start = NowNs();
    if (!scheduler_->has_workers()) {
      ProduceInCallerLocked();
    } else if (!WaitForTurnLocked(deadline)) {
      stats_->AddWait(NowNs() - wait_start);
      *pending = true;
      return std::nullopt;
    }
  }
}

}  // namespace feedline::internal
