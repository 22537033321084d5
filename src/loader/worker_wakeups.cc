#include "src/loader/worker_wakeups.h"

namespace feedline::internal {

void WorkerWakeups::SetWorkerCount(int n) {
  worker_cvs_.clear();
  for (int w = 0; w < n; ++w) worker_cvs_.push_back(std::make_unique<CondVar>());
  worker_waits_ = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(n));
}

void WorkerWakeups::Wait(Mutex& mu) {
  ++waiting_;
  shared_cv_.Wait(&mu);
  --waiting_;
}

void WorkerWakeups::Wait(Mutex& mu, int worker,
                         std::optional<std::chrono::steady_clock::time_point> until) {
  const size_t w = static_cast<size_t>(worker);
  ++waiting_;
  worker_waits_[w].fetch_add(1, std::memory_order_relaxed);
  if (until) {
    worker_cvs_[w]->WaitUntil(&mu, *until);
  } else {
    worker_cvs_[w]->Wait(&mu);
  }
  worker_waits_[w].fetch_sub(1, std::memory_order_relaxed);
  --waiting_;
}

void WorkerWakeups::WakeAll() {
  shared_cv_.NotifyAll();
  for (const auto& cv : worker_cvs_) cv->NotifyAll();
}

void WorkerWakeups::WakeOne() {
  for (size_t w = 0; w < worker_cvs_.size(); ++w) {
    if (worker_waits_[w].load(std::memory_order_relaxed) > 0) {
      worker_cvs_[w]->NotifyOne();
      return;
    }
  }
  shared_cv_.NotifyOne();
}

}  // namespace feedline::internal
