#include "src/loader/worker_roster.h"

#include <algorithm>

namespace feedline::internal {

WorkerRoster::WorkerRoster(int num_workers, bool interchangeable, WorkerWakeups* wakeups)
    : num_workers_(std::max(1, num_workers)),
      interchangeable_(interchangeable),
      wakeups_(wakeups),
      active_(num_workers_),
      waiting_(static_cast<size_t>(num_workers_), 0),
      lent_(static_cast<size_t>(num_workers_), 0) {
  wakeups_->set_wake_one_on_release(interchangeable_);
}

void WorkerRoster::SetActive(int n) {
  active_ = std::clamp(n, 1, num_workers_);
  parked_.store(active_ < num_workers_, std::memory_order_relaxed);
  // A parked worker may be the one a single wake reaches.
  wakeups_->set_wake_one_on_release(interchangeable_ && active_ == num_workers_);
  wakeups_->WakeAll();
}

void WorkerRoster::SetWaiting(int worker, bool waiting) {
  const size_t w = static_cast<size_t>(worker);
  waiting_[w] = waiting ? 1 : 0;
  // Woken while its id is lent, the worker goes back to waiting: the wake
  // may have been meant for work it cannot take now.
  if (!waiting && lent_[w] != 0) woken_while_lent_ = true;
}

bool WorkerRoster::Return(int worker) {
  lent_[static_cast<size_t>(worker)] = 0;
  const bool woken = woken_while_lent_;
  woken_while_lent_ = false;
  return woken;
}

void WorkerRoster::WakeAnother() const {
  if (parked()) {
    wakeups_->WakeAll();
  } else {
    wakeups_->WakeOne();
  }
}

}  // namespace feedline::internal
