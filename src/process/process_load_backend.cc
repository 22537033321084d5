#include "src/process/process_load_backend.h"

#include <exception>
#include <utility>

#include "feedline/dataset.h"
#include "feedline/error.h"
#include "src/core/sample_context_access.h"
#include "src/loader/exception_kind.h"

namespace feedline::internal {

ProcessLoadBackend::ProcessLoadBackend(std::shared_ptr<ProcessWorkers> workers,
                                       int64_t dataset_size)
    : workers_(std::move(workers)), dataset_size_(dataset_size) {
  if (!workers_) throw Error("ProcessLoadBackend: workers must not be null");
}

LoadBackendTraits ProcessLoadBackend::traits() const {
  LoadBackendTraits traits;
  const bool stream = dataset_size_ < 0;
  traits.shared_slots = !stream && workers_->slot_allocator() != nullptr;
  traits.round_trip_rows = !stream;
  traits.costly_workers = true;
  traits.starts_workers = true;
  return traits;
}

std::shared_ptr<SlotAllocator> ProcessLoadBackend::slot_allocator() const {
  if (dataset_size_ >= 0) {
    if (auto shared = workers_->slot_allocator()) return shared;
  }
  return std::make_shared<HeapSlotAllocator>();  // without shared memory, or a stream's
}

void ProcessLoadBackend::StartWorker(int worker) const {
  try {
    workers_->StartWorker(worker);
  } catch (const WorkerStartError&) {
    throw;  // no worker_init ran: the process never started
  } catch (const std::exception& e) {
    throw WorkerInitError(worker, e.what());
  }
}

void ProcessLoadBackend::LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx,
                                  bool whole_batch) const {
  bool in_range = true;
  for (const RowLoad& row : rows) {
    in_range = in_range && row.index >= 0 && row.index < dataset_size_;
  }
  // One row, or a row out of range (it fails alone), go one by one; so do
  // rows whose process died with them in flight (ProcessWorkers::LoadRows
  // then loaded none of them).
  if (rows.size() > 1 && in_range && workers_->LoadRows(rows, epoch, ctx, whole_batch)) return;
  LoadOneByOne(rows, epoch, ctx);
}

void ProcessLoadBackend::LoadOneByOne(std::span<RowLoad> rows, int64_t epoch,
                                      SampleContext& ctx) const {
  for (RowLoad& row : rows) {
    SampleContextAccess::Reset(ctx, epoch, row.index);
    row.error = nullptr;
    try {
      row.out->Clear();
      CheckIndex(row.index, dataset_size_);
      workers_->LoadSample(row.index, ctx, *row.out);
    } catch (...) {
      RethrowIfCancellation();
      row.error = std::current_exception();
    }
  }
}

}  // namespace feedline::internal
