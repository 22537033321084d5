#include "src/loader/worker_init.h"

#include <exception>

#include "src/loader/exception_kind.h"

namespace feedline::internal {

bool WorkerInit::Run(int worker) {
  if (!backend_->traits().starts_workers) return true;
  try {
    // The backend says what failed (a worker_init, a worker process that
    // could not start), or passes an interrupt on as it is.
    backend_->StartWorker(worker);
    MutexLock lock(&scheduler_->mu());
    scheduler_->WorkerInitDoneLocked(worker);
    return true;
  } catch (...) {
    RethrowIfCancellation();
    MutexLock lock(&scheduler_->mu());
    scheduler_->FailLocked(std::current_exception());
    scheduler_->WorkerInitDoneLocked(worker);
    return false;
  }
}

}  // namespace feedline::internal
