#include "src/loader/worker_control.h"

#include <algorithm>
#include <utility>

namespace feedline::internal {

void WorkerControl::StartWorkersLocked() {
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();  // mu(), by the pool's name
  if (workers_->started_locked()) return;
  init_pending_.assign(static_cast<size_t>(options_.num_workers), backend_->traits().starts_workers ? 1 : 0);
  workers_->StartLocked();
}

void WorkerControl::StopWorkersLocked() {
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();
  workers_->StopLocked();
}

void WorkerControl::RestartWorkersLocked() {
  if (workers_ == nullptr) return;
  workers_->mu().AssertHeld();
  workers_->StopLocked();  // the previous epoch's threads, if any
  workers_->StartLocked();
}

void WorkerControl::JoinRetiredWorkers() {
  if (workers_ != nullptr) workers_->JoinRetired();
}

// Without the lock: WorkerRoster::WakeAnother reads only what is safe
// without it (an atomic and the wake-ups); the analysis cannot see that
// through the guarded member.
void WorkerControl::WakeAnotherWorker() const { roster_.WakeAnother(); }

void WorkerControl::WorkerInitDoneLocked(int worker) {
  const size_t w = static_cast<size_t>(worker);
  if (w >= init_pending_.size() || init_pending_[w] == 0) return;
  init_pending_[w] = 0;
  consumer_.Notify();  // a consumer may wait for it to end the epoch
}

bool WorkerControl::WorkerInitPendingLocked() const {
  return std::find(init_pending_.begin(), init_pending_.end(), 1) != init_pending_.end();
}

void WorkerControl::FailLocked(std::exception_ptr error) { consumer_.Fail(std::move(error)); }

}  // namespace feedline::internal
