// EngineParts: a Scheduler, a BatchFiller and what they share (slot pool,
// layout, statistics, failure policy), wired as Engine::Assemble wires them,
// for the tests that drive those parts through their own interfaces. The
// test plays the worker (Claim, Load) and the consumer (TakeReady, Deliver),
// one step at a time, so that it decides the order in which things happen.
// Samples load on the threads' backend, whose calls it counts.
#ifndef FEEDLINE_TESTS_LOADER_ENGINE_PARTS_H_
#define FEEDLINE_TESTS_LOADER_ENGINE_PARTS_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "feedline/batch.h"
#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"
#include "feedline/loader_options.h"
#include "feedline/sample_context.h"
#include "feedline/sampler.h"
#include "src/core/mutex.h"
#include "src/loader/batch_filler.h"
#include "src/loader/error_policy.h"
#include "src/loader/scheduler.h"
#include "src/loader/slot.h"
#include "src/loader/slot_layout.h"
#include "src/loader/stats_collector.h"
#include "src/loader/thread_load_backend.h"
#include "src/loader/worker_pool.h"

namespace feedline::testing {

// The threads' backend, counting the rows of each LoadRows call, and
// claiming, if asked, that each row costs a round trip (as worker
// processes' rows do).
class CountingLoadBackend final : public internal::LoadBackend {
 public:
  CountingLoadBackend(const Dataset* dataset, bool round_trip_rows)
      : threads_(dataset), round_trip_rows_(round_trip_rows) {}
  internal::LoadBackendTraits traits() const override {
    internal::LoadBackendTraits traits = threads_.traits();
    traits.round_trip_rows = round_trip_rows_;
    return traits;
  }
  std::shared_ptr<internal::SlotAllocator> slot_allocator() const override {
    return threads_.slot_allocator();
  }
  void StartWorker(int worker) const override { threads_.StartWorker(worker); }
  void LoadRows(std::span<internal::RowLoad> rows, int64_t epoch, SampleContext& ctx,
                bool whole_batch) const override {
    {
      internal::MutexLock lock(&mu_);
      rows_per_call_.push_back(rows.size());
      whole_batches_.push_back(whole_batch);
    }
    threads_.LoadRows(rows, epoch, ctx, whole_batch);
  }
  void AbandonInFlight() const override { threads_.AbandonInFlight(); }
  int64_t worker_restarts() const override { return 0; }
  std::vector<size_t> rows_per_call() const {
    internal::MutexLock lock(&mu_);
    return rows_per_call_;
  }
  // Whether each call's rows were a whole batch (LoadRows' whole_batch).
  std::vector<bool> whole_batches() const {
    internal::MutexLock lock(&mu_);
    return whole_batches_;
  }

 private:
  internal::ThreadLoadBackend threads_;
  const bool round_trip_rows_;
  mutable internal::Mutex mu_;
  mutable std::vector<size_t> rows_per_call_ GUARDED_BY(mu_);
  mutable std::vector<bool> whole_batches_ GUARDED_BY(mu_);
};

class EngineParts {
 public:
  // Batches of options.batch_size in index order, in as many slots as the
  // engine allows at first: max(2, num_workers * prefetch_factor).
  // `round_trip_rows`: the backend says each row costs a round trip.
  EngineParts(std::shared_ptr<const Dataset> dataset, LoaderOptions options,
              bool round_trip_rows = false)
      : options_(std::move(options)),
        dataset_(std::move(dataset)),
        stats_(options_.num_workers),
        failure_policy_(options_, dataset_.get()),
        backend_(dataset_.get(), round_trip_rows),
        scheduler_(options_,
                   std::make_shared<FixedBatchSampler>(
                       std::make_shared<SequentialSampler>(dataset_->size()),
                       options_.batch_size, options_.drop_last),
                   dataset_.get(), &backend_, &layout_,
                   std::max(2, options_.num_workers * options_.prefetch_factor), &stats_),
        filler_(options_, dataset_.get(), &backend_, &layout_, &failure_policy_, &scheduler_, &stats_) {}

  const internal::FailurePolicy& failure_policy() const { return failure_policy_; }
  // The number of rows of each LoadBackend::LoadRows call so far.
  std::vector<size_t> rows_per_load_call() const { return backend_.rows_per_call(); }
  // Whether each LoadRows call's rows were a whole batch.
  std::vector<bool> whole_batch_load_calls() const { return backend_.whole_batches(); }
  const internal::StatsCollector& stats() const { return stats_; }

  void StartEpoch(int64_t epoch) {
    internal::PlannedEpoch planned = scheduler_.PlanEpoch(epoch);
    internal::MutexLock lock(&scheduler_.mu());
    scheduler_.StartEpochLocked(std::move(planned), 0);
  }
  void AbandonEpoch() {
    internal::MutexLock lock(&scheduler_.mu());
    scheduler_.AbandonEpochLocked();
  }
  void SetSlotLimit(int n) {
    internal::MutexLock lock(&scheduler_.mu());
    scheduler_.SetSlotLimitLocked(n);
  }

  // As a worker: up to `chunk` rows (with batch_per_worker, `worker`'s own
  // batch, whole), or nothing if there is nothing to claim.
  std::optional<internal::Task> Claim(int64_t chunk, int worker = -1) {
    internal::MutexLock lock(&scheduler_.mu());
    internal::Task task;
    if (!scheduler_.ClaimLocked(chunk, &task, worker)) {
      return std::nullopt;
    }
    return task;
  }
  // As a worker: loads the task's rows, without the lock; the task that
  // finishes a batch's last row collates it and makes it ready.
  void Load(const internal::Task& task) { filler_.RunTask(task, ctx_, &lane_, 0); }

  // As the consumer: the next ready batch to deliver (batch k after k-1; with
  // in_order = false, the lowest ready), or null if there is none.
  internal::Slot* TakeReady() {
    internal::MutexLock lock(&scheduler_.mu());
    return scheduler_.TakeReadyLocked();
  }
  // As the consumer: the batch in `slot`, or nothing if every row was
  // skipped; throws the SampleError of a batch that raises.
  std::optional<Batch> Deliver(internal::Slot* slot) {
    internal::MutexLock lock(&scheduler_.mu());
    return scheduler_.DeliverLocked(slot);
  }
  // As the consumer: rethrows what ended the epoch (an interrupt), if anything.
  void ThrowPending() {
    internal::MutexLock lock(&scheduler_.mu());
    scheduler_.ThrowPendingLocked();
  }
  void GrowIfCallerHoldsEverySlot() {
    internal::MutexLock lock(&scheduler_.mu());
    scheduler_.GrowIfCallerHoldsEverySlotLocked();
  }
  bool HasFreeSlot() {
    internal::MutexLock lock(&scheduler_.mu());
    return scheduler_.HasFreeSlotLocked();
  }

 private:
  const LoaderOptions options_;
  const std::shared_ptr<const Dataset> dataset_;
  internal::SlotLayout layout_;
  internal::StatsCollector stats_;
  internal::FailurePolicy failure_policy_;
  CountingLoadBackend backend_;
  internal::Scheduler scheduler_;
  internal::BatchFiller filler_;
  SampleContext ctx_{options_.seed, 0, 0, /*worker_id=*/0};
  internal::WorkerLane lane_;
};

}  // namespace feedline::testing

#endif  // FEEDLINE_TESTS_LOADER_ENGINE_PARTS_H_
