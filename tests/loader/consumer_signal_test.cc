// ConsumerSignal (src/loader/consumer_signal.h): the consumer's wait, and
// the failures that end iteration: a worker failure rethrown every time, an
// interrupt once.
#include "src/loader/consumer_signal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "src/core/mutex.h"

namespace feedline::internal {
namespace {

TEST(ConsumerSignal, AFailureIsRethrownEveryTimeAnInterruptOnce) {
  ConsumerSignal signal;
  EXPECT_NO_THROW(signal.ThrowPending());
  signal.SetInterrupt(std::make_exception_ptr(std::runtime_error("first")));
  signal.SetInterrupt(std::make_exception_ptr(std::runtime_error("second")));  // kept: the first
  try {
    signal.ThrowPending();
    ADD_FAILURE() << "no interrupt rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  EXPECT_NO_THROW(signal.ThrowPending());  // once

  signal.Fail(std::make_exception_ptr(std::logic_error("worker_init")));
  EXPECT_THROW(signal.ThrowPending(), std::logic_error);
  EXPECT_THROW(signal.ThrowPending(), std::logic_error);  // every time
  EXPECT_NO_THROW(signal.ThrowInterrupt());               // not an interrupt
}

TEST(ConsumerSignal, ClearInterruptDropsIt) {
  ConsumerSignal signal;
  signal.SetInterrupt(std::make_exception_ptr(std::runtime_error("stale")));
  signal.ClearInterrupt();
  EXPECT_NO_THROW(signal.ThrowInterrupt());
}

TEST(ConsumerSignal, WaitReturnsAtTheDeadlineWithoutProgress) {
  Mutex mu;
  ConsumerSignal signal;
  MutexLock lock(&mu);
  const auto start = std::chrono::steady_clock::now();
  signal.Wait(mu, start + std::chrono::milliseconds(50), std::nullopt);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
}

TEST(ConsumerSignal, AReadyBatchWakesTheSleepingConsumer) {
  Mutex mu;
  ConsumerSignal signal;
  using Clock = std::chrono::steady_clock;
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  // Written under `mu`: MarkReady found the consumer asleep, and when.
  bool slept = false;
  Clock::time_point marked;
  double woke_after_s = -1;
  std::thread consumer([&] {
    MutexLock lock(&mu);
    // A MarkReady that comes while the consumer still polls (a loaded
    // machine may run it late) ends that Wait without a wake-up: it waits
    // again, until one finds it asleep.
    while (!slept && Clock::now() < give_up) signal.Wait(mu, give_up, std::nullopt);
    if (slept) woke_after_s = std::chrono::duration<double>(Clock::now() - marked).count();
  });
  // Past its brief polling the consumer sleeps; MarkReady says so, and the
  // wake-up sent then must reach it.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (bool done = false; !done && Clock::now() < give_up;) {
    {
      MutexLock lock(&mu);
      if (signal.MarkReady()) {
        slept = true;
        marked = Clock::now();
        signal.ready_cv().NotifyOne();
        done = true;
      }
    }
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  consumer.join();
  EXPECT_TRUE(slept);
  EXPECT_GE(woke_after_s, 0.0);
  EXPECT_LT(woke_after_s, 10.0);
}

}  // namespace
}  // namespace feedline::internal
