#include "src/loader/consumer_signal.h"

#include <thread>
#include <utility>

namespace feedline::internal {
namespace {

// Times the consumer yields, watching for a ready batch, before it sleeps.
constexpr int kConsumerPolls = 64;

}  // namespace

void ConsumerSignal::Wait(Mutex& mu, std::optional<Clock::time_point> deadline,
                          std::optional<std::chrono::milliseconds> wake_after) {
  const uint64_t seen = progress_.load(std::memory_order_acquire);
  {
    MutexUnlock unlock(&mu);
    for (int spin = 0; spin < kConsumerPolls; ++spin) {
      if (progress_.load(std::memory_order_acquire) != seen) break;
      std::this_thread::yield();
    }
  }
  // progress_ only changes under the lock, so this predicate cannot miss a
  // change made while the lock was dropped for polling.
  auto moved = [&] { return progress_.load(std::memory_order_relaxed) != seen; };
  if (moved()) return;
  ++consumer_waiting_;
  if (wake_after) {
    auto until = Clock::now() + *wake_after;
    if (deadline && *deadline < until) until = *deadline;
    while (!moved() && ready_cv_.WaitUntil(&mu, until)) {
    }
  } else if (deadline) {
    while (!moved() && ready_cv_.WaitUntil(&mu, *deadline)) {
    }
  } else {
    while (!moved()) ready_cv_.Wait(&mu);
  }
  --consumer_waiting_;
}

void ConsumerSignal::Notify() {
  progress_.fetch_add(1, std::memory_order_release);
  ready_cv_.NotifyAll();
}

bool ConsumerSignal::MarkReady() {
  progress_.fetch_add(1, std::memory_order_release);
  return consumer_waiting_ > 0;
}

void ConsumerSignal::Fail(std::exception_ptr error) {
  fatal_ = std::move(error);
  Notify();
}

void ConsumerSignal::SetInterrupt(std::exception_ptr error) {
  if (!interrupt_) interrupt_ = std::move(error);
}

void ConsumerSignal::ThrowPending() {
  if (fatal_) std::rethrow_exception(fatal_);
  ThrowInterrupt();
}

void ConsumerSignal::ThrowInterrupt() {
  if (!interrupt_) return;
  std::exception_ptr error = std::move(interrupt_);
  interrupt_ = nullptr;
  std::rethrow_exception(error);
}

}  // namespace feedline::internal
