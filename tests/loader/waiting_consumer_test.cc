// A consumer that would wait for a batch of cheap rows loads rows itself,
// under the id of a worker that waits for work (Engine::LoadWhileWaitingLocked).
// What a dataset sees must not change: every load has a worker id in
// [0, num_workers), no two threads load under one id at once, and the
// batches are those of any other worker count. With a timeout or a
// worker_init the consumer never loads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "loader/test_datasets.h"

namespace feedline {
namespace {

constexpr int kWorkers = 2;

// Sample i: "index" = i, written in place. Records, for every load, whether
// its worker id was in range, whether another thread was loading under the
// same id at that moment, and whether it ran on the thread that made the
// dataset (the test's, which is the loader's consumer).
class WatchedDataset : public Dataset {
 public:
  explicit WatchedDataset(int64_t n) : n_(n), consumer_(std::this_thread::get_id()) {}
  int64_t size() const override { return n_; }
  std::vector<FieldSpec> FixedFields() const override {
    return {{"index", DType::kI64, Shape{}}};
  }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    const int w = ctx.worker_id();
    if (std::this_thread::get_id() == consumer_) consumer_loads_.fetch_add(1);
    if (w < 0 || w >= kWorkers) {
      out_of_range_.fetch_add(1);
    } else if (in_use_[w].exchange(true)) {
      overlaps_.fetch_add(1);  // another thread holds this id now
    } else {
      out.SetScalar<int64_t>("index", index);
      in_use_[w].store(false);
      return;
    }
    out.SetScalar<int64_t>("index", index);
  }

  int64_t consumer_loads() const { return consumer_loads_.load(); }
  int64_t out_of_range() const { return out_of_range_.load(); }
  int64_t overlaps() const { return overlaps_.load(); }

 private:
  int64_t n_;
  std::thread::id consumer_;
  mutable std::atomic<bool> in_use_[kWorkers] = {};
  mutable std::atomic<int64_t> consumer_loads_{0};
  mutable std::atomic<int64_t> out_of_range_{0};
  mutable std::atomic<int64_t> overlaps_{0};
};

std::vector<std::vector<int64_t>> LoadAll(const std::shared_ptr<const Dataset>& dataset,
                                          LoaderOptions options, int epochs) {
  DataLoader loader(dataset, options);
  std::vector<std::vector<int64_t>> batches;
  for (int e = 0; e < epochs; ++e) {
    for (const Batch& batch : loader) batches.push_back(testing::Indices(batch));
  }
  return batches;
}

LoaderOptions Options() {
  LoaderOptions options;
  options.batch_size = 64;
  options.shuffle = true;
  options.seed = 7;
  options.num_workers = kWorkers;
  options.persistent_workers = true;
  return options;
}

TEST(WaitingConsumerTest, LoadsOnlyUnderAWaitingWorkersIdAndKeepsTheBatches) {
  auto watched = std::make_shared<WatchedDataset>(20000);
  const auto batches = LoadAll(watched, Options(), 3);

  LoaderOptions in_caller = Options();
  in_caller.num_workers = 0;
  EXPECT_EQ(batches, LoadAll(std::make_shared<WatchedDataset>(20000), in_caller, 3));
  EXPECT_EQ(watched->out_of_range(), 0);
  EXPECT_EQ(watched->overlaps(), 0);
  // How often the consumer loaded depends on how the threads were scheduled.
  ::testing::Test::RecordProperty("consumer_loads", static_cast<int>(watched->consumer_loads()));
}

TEST(WaitingConsumerTest, NeverLoadsWithATimeoutOrAWorkerInit) {
  LoaderOptions with_timeout = Options();
  with_timeout.timeout = std::chrono::milliseconds(10000);
  auto timed = std::make_shared<WatchedDataset>(20000);
  LoadAll(timed, with_timeout, 2);
  EXPECT_EQ(timed->consumer_loads(), 0);

  LoaderOptions with_init = Options();
  with_init.worker_init = [](int) {};
  auto initialized = std::make_shared<WatchedDataset>(20000);
  LoadAll(initialized, with_init, 2);
  EXPECT_EQ(initialized->consumer_loads(), 0);
  EXPECT_EQ(initialized->out_of_range(), 0);
}

}  // namespace
}  // namespace feedline
