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
  std::atomic<bool> done{false};
  double waited_s = 0;
  std::thread consumer([&] {
    MutexLock lock(&mu);
    const auto start = std::chrono::steady_clock::now();
    signal.Wait(mu, start + std::chrono::seconds(30), std::nullopt);
    waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done = true;
  });
  // Past its brief polling the consumer sleeps; MarkReady says so, and the
  // wake-up sent then must reach it.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  bool slept = false;
  while (!done.load()) {
    {
      MutexLock lock(&mu);
      if (signal.MarkReady()) {
        slept = true;
        signal.ready_cv().NotifyOne();
      }
    }
    if (slept) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  consumer.join();
  EXPECT_TRUE(slept);
  EXPECT_LT(waited_s, 10.0);
}

}  // namespace
}  // namespace feedline::internal
