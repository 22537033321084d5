// Worker processes hold back a third batch slot while the loop waits for its
// batches (RowClaims::HoldsBackNewSlot). Loops that make the hold
// begin and end in unusual ways still get every batch, in order, without a
// stall: one that keeps its two previous batches over batches of 1 and 200
// rows, one that waits in 1 ms TryNext slices while rows run past the
// timeout (error_policy skip), and one that takes batches out of order
// over rows of very different costs. Bounded: ~2 s in all; a stall would
// exceed each test's deadline check (and CTest's timeout).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

using Clock = std::chrono::steady_clock;

// Sample i: "index" = i, after sleeping cost(i) microseconds.
class TimedRows : public Dataset {
 public:
  TimedRows(int64_t n, int (*cost_us)(int64_t)) : n_(n), cost_us_(cost_us) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    CheckIndex(index, n_);
    std::this_thread::sleep_for(std::chrono::microseconds(cost_us_(index)));
    out.SetScalar<int64_t>("index", index);
  }
  std::vector<FieldSpec> FixedFields() const override { return {{"index", DType::kI64, Shape{}}}; }

 private:
  int64_t n_;
  int (*cost_us_)(int64_t);
};

// Consecutive batches of 1, 200, 64, 1 and 200 rows, in turn.
class UnevenBatches : public BatchSampler {
 public:
  explicit UnevenBatches(int64_t n) {
    const int64_t sizes[] = {1, 200, 64, 1, 200};
    std::vector<int64_t> batch;
    for (int64_t i = 0, k = 0; i < n; ++k) {
      batch.clear();
      for (int64_t j = 0; j < sizes[k % 5] && i < n; ++j) batch.push_back(i++);
      plan_.Add(batch);
    }
  }
  int64_t size() const override { return plan_.num_batches(); }
  EpochPlan Plan(int64_t) const override { return plan_; }

 private:
  EpochPlan plan_;
};

LoaderOptions ProcessOptions() {
  LoaderOptions options;
  options.worker_mode = WorkerMode::kProcess;
  options.num_workers = 2;
  options.prefetch_factor = 2;
  return options;
}

std::vector<int64_t> Rows(const Batch& batch) {
  const int64_t* index = batch["index"].data<int64_t>();
  return std::vector<int64_t>(index, index + batch.size());
}

TEST(SlotHoldBackPatterns, ALoopKeepingTwoPreviousBatchesOfUnevenSizesGetsThemAllInOrder) {
  constexpr int64_t kRows = 1400;
  auto batches = std::make_shared<UnevenBatches>(kRows);
  LoaderOptions options = ProcessOptions();
  options.batch_sampler = batches;
  DataLoader loader(std::make_shared<TimedRows>(kRows, [](int64_t) { return 100; }), options);
  const EpochPlan plan = batches->Plan(0);
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::deque<Batch> kept;  // the batch in use and the two before it
  int64_t b = 0;
  while (std::optional<Batch> batch = loader.Next()) {
    ASSERT_LT(b, plan.num_batches());
    const auto want = plan.batch(b);
    ASSERT_EQ(Rows(*batch), std::vector<int64_t>(want.begin(), want.end())) << "batch " << b;
    kept.push_back(std::move(*batch));
    if (kept.size() > 3) kept.pop_front();
    ++b;
  }
  EXPECT_EQ(b, plan.num_batches());
  EXPECT_LT(Clock::now(), deadline);
}

TEST(SlotHoldBackPatterns, TryNextSlicesWithRowsPastTheTimeoutSkipThemAndEndTheEpoch) {
  // Rows 50, 250 and 450 take 2 s against a 100 ms timeout: each is skipped
  // (its worker process is stopped), every other row arrives in order.
  constexpr int64_t kRows = 512;
  LoaderOptions options = ProcessOptions();
  options.batch_size = 64;
  options.timeout = std::chrono::milliseconds(100);
  options.error_policy = ErrorPolicy::kSkip;
  auto cost = [](int64_t i) { return i % 200 == 50 ? 2000000 : 300; };
  DataLoader loader(std::make_shared<TimedRows>(kRows, cost), options);
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::vector<int64_t> got;
  Batch previous;  // kept while the next one is awaited, as a training step does
  while (true) {
    Batch batch;
    const NextStatus status = loader.TryNext(std::chrono::milliseconds(1), &batch);
    ASSERT_LT(Clock::now(), deadline) << "stalled after " << got.size() << " rows";
    if (status == NextStatus::kEnd) break;
    if (status == NextStatus::kPending) continue;
    for (int64_t i : Rows(batch)) got.push_back(i);
    previous = std::move(batch);
  }
  std::vector<int64_t> want;
  for (int64_t i = 0; i < kRows; ++i) {
    if (i % 200 != 50) want.push_back(i);
  }
  EXPECT_EQ(got, want);
}

TEST(SlotHoldBackPatterns, OutOfOrderBatchesOfMixedCostRowsAreAllDelivered) {
  // 1 row in 20 takes 20 ms, the others 10 us.
  constexpr int64_t kRows = 64 * 10;
  LoaderOptions options = ProcessOptions();
  options.batch_size = 64;
  options.in_order = false;
  auto cost = [](int64_t i) { return i % 20 == 7 ? 20000 : 10; };
  DataLoader loader(std::make_shared<TimedRows>(kRows, cost), options);
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::multiset<int64_t> got;
  std::optional<Batch> held;
  while (std::optional<Batch> batch = loader.Next()) {
    ASSERT_EQ(batch->size(), 64);
    for (int64_t i : Rows(*batch)) got.insert(i);
    held = std::move(batch);
  }
  std::multiset<int64_t> want;
  for (int64_t i = 0; i < kRows; ++i) want.insert(i);
  EXPECT_EQ(got, want);
  EXPECT_LT(Clock::now(), deadline);
}

}  // namespace
}  // namespace feedline
