// Dataset::EpochOrder and EpochProgress: the loader tells its dataset the
// epoch's order before the epoch's first Get (from the batch a restored
// epoch resumes at), an empty order when it abandons the epoch, and the
// delivered count as batches are handed out, with threads and without.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/dataset.h"

namespace feedline {
namespace {

class RecordingDataset : public Dataset {
 public:
  int64_t size() const override { return 20; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (orders_.empty()) got_before_order_ = true;
    }
    out.SetScalar<int64_t>("x", index);
  }
  void EpochOrder(std::span<const int64_t> order) const override {
    std::lock_guard<std::mutex> lock(mu_);
    orders_.emplace_back(order.begin(), order.end());
    progress_.emplace_back();
  }
  void EpochProgress(int64_t delivered) const override {
    std::lock_guard<std::mutex> lock(mu_);
    progress_.back().push_back(delivered);
  }

  std::vector<std::vector<int64_t>> orders() const {
    std::lock_guard<std::mutex> lock(mu_);
    return orders_;
  }
  std::vector<std::vector<int64_t>> progress() const {
    std::lock_guard<std::mutex> lock(mu_);
    return progress_;
  }
  bool got_before_order() const {
    std::lock_guard<std::mutex> lock(mu_);
    return got_before_order_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::vector<int64_t>> orders_;
  mutable std::vector<std::vector<int64_t>> progress_;  // per order told
  mutable bool got_before_order_ = false;
};

LoaderOptions EpochOrderOptions(int workers) {
  LoaderOptions options;
  options.batch_size = 4;
  options.shuffle = true;
  options.seed = 3;
  options.num_workers = workers;
  return options;
}

TEST(EpochOrder, TheDatasetIsToldTheEpochsOrderAndTheDeliveredCount) {
  for (int workers : {0, 2}) {
    SCOPED_TRACE(workers);
    auto data = std::make_shared<RecordingDataset>();
    DataLoader loader(data, EpochOrderOptions(workers));
    std::vector<int64_t> delivered;
    while (std::optional<Batch> batch = loader.Next()) {
      delivered.insert(delivered.end(), batch->indices().begin(), batch->indices().end());
    }
    EXPECT_FALSE(data->got_before_order());
    ASSERT_GE(data->orders().size(), 1u);
    EXPECT_EQ(data->orders()[0], delivered);
    EXPECT_EQ(data->progress()[0], (std::vector<int64_t>{4, 8, 12, 16, 20}));
  }
}

TEST(EpochOrder, AnAbandonedEpochIsAnEmptyOrderAndARestoredOneStartsWhereItResumes) {
  auto data = std::make_shared<RecordingDataset>();
  DataLoader loader(data, EpochOrderOptions(1));
  std::vector<int64_t> all;
  while (std::optional<Batch> batch = loader.Next()) {
    all.insert(all.end(), batch->indices().begin(), batch->indices().end());
  }
  // Epoch 1: two batches, then abandoned.
  ASSERT_TRUE(loader.Next());
  ASSERT_TRUE(loader.Next());
  const LoaderState at_two = loader.state();
  loader.Reset();
  std::vector<std::vector<int64_t>> orders = data->orders();
  ASSERT_EQ(orders.size(), 3u);
  EXPECT_TRUE(orders[2].empty());
  // Epoch 1 again from batch 2: the order from its ninth index on.
  loader.Restore(at_two);
  std::vector<int64_t> rest;
  while (std::optional<Batch> batch = loader.Next()) {
    rest.insert(rest.end(), batch->indices().begin(), batch->indices().end());
  }
  orders = data->orders();
  ASSERT_EQ(orders.size(), 4u);
  EXPECT_EQ(orders[3], rest);
  EXPECT_EQ(orders[3].size(), 12u);
  EXPECT_EQ(orders[1].size(), 20u);
  EXPECT_EQ(std::vector<int64_t>(orders[1].begin() + 8, orders[1].end()), rest);
  EXPECT_EQ(data->progress()[3], (std::vector<int64_t>{4, 8, 12}));
}

}  // namespace
}  // namespace feedline
