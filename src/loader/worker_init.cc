#include "src/loader/worker_init.h"

#include <exception>

#include "feedline/error.h"
#include "src/loader/exception_kind.h"

namespace feedline::internal {

bool WorkerInit::Run(int worker) {
  if (!options_.worker_init) return true;
  try {
    options_.worker_init(worker);
    MutexLock lock(&scheduler_->mu());
    scheduler_->WorkerInitDoneLocked(worker);
    return true;
  } catch (...) {
    const CaughtException caught = SortCurrentException();
    MutexLock lock(&scheduler_->mu());
    switch (caught.kind) {
      case ExceptionKind::kOutOfMemory:
      case ExceptionKind::kSampleError:
      case ExceptionKind::kException:
        scheduler_->FailLocked(
            std::make_exception_ptr(WorkerInitError(worker, caught.exception->what())));
        break;
      case ExceptionKind::kInterrupt:  // KeyboardInterrupt in worker_init_fn: passed on as it is
        scheduler_->FailLocked(std::current_exception());
        break;
    }
    scheduler_->WorkerInitDoneLocked(worker);
    return false;
  }
}

}  // namespace feedline::internal
