// Dataset::AbandonInFlight: the loader tells a dataset when it abandons the
// samples in flight, so one whose Get can be stopped (a worker process, a
// wait on I/O) lets a new iteration start without waiting for a stuck sample.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "feedline/data_loader.h"
#include "feedline/error.h"

namespace feedline {
namespace {

// Sample 3 waits until the loader abandons it (or 30 s, a hang for the test).
class StuckUntilAbandoned : public Dataset {
 public:
  int64_t size() const override { return 12; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == 3 && !released_) {
      std::unique_lock<std::mutex> lock(mu_);
      stuck_ = true;
      if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return abandoned_; })) return;
      abandoned_ = false;
      released_ = true;
      throw SampleError(FailureKind::kCancelled, "", "abandoned");
    }
    out.SetScalar<int64_t>("index", index);
  }
  void AbandonInFlight() const override {
    calls_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    if (stuck_) abandoned_ = true;
    cv_.notify_all();
  }
  int calls() const { return calls_.load(); }
  // Waits until sample 3 is in flight and stuck.
  bool WaitUntilStuck() const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stuck_) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable bool stuck_ = false;
  mutable bool abandoned_ = false;
  mutable std::atomic<bool> released_{false};
  mutable std::atomic<int> calls_{0};
};

TEST(AbandonInFlight, ANewRangeForDoesNotWaitForAStuckSampleOfTheAbandonedOne) {
  auto dataset = std::make_shared<StuckUntilAbandoned>();
  LoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 2;
  DataLoader loader(dataset, o);
  const auto start = std::chrono::steady_clock::now();
  for (const Batch& b : loader) {
    (void)b;
    ASSERT_TRUE(dataset->WaitUntilStuck());
    break;  // sample 3 is in flight, stuck until abandoned
  }
  int64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();  // begin() abandons the first epoch
  EXPECT_EQ(samples, 12);
  EXPECT_GE(dataset->calls(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace feedline
