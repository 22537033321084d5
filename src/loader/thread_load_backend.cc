#include "src/loader/thread_load_backend.h"

#include "feedline/error.h"
#include "src/core/sample_context_access.h"
#include "src/loader/exception_kind.h"

namespace feedline::internal {

LoadBackendTraits ThreadLoadBackend::traits() const {
  LoadBackendTraits traits;
  traits.starts_workers = static_cast<bool>(worker_init_);
  return traits;
}

void ThreadLoadBackend::StartWorker(int worker) const {
  if (!worker_init_) return;
  try {
    worker_init_(worker);
  } catch (...) {
    const CaughtException caught = SortCurrentException();
    if (caught.kind == ExceptionKind::kInterrupt) throw;  // KeyboardInterrupt in worker_init_fn
    throw WorkerInitError(worker, caught.exception->what());
  }
}

void ThreadLoadBackend::LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx,
                                 bool /*whole_batch*/) const {
  for (RowLoad& row : rows) {
    SampleContextAccess::Reset(ctx, epoch, row.index);
    try {
      dataset_->Get(row.index, *row.out, ctx);
    } catch (...) {
      RethrowIfCancellation();
      row.error = std::current_exception();
    }
  }
}

}  // namespace feedline::internal
