// Worker processes and a loop that polls with TryNext: a consumer that
// found no batch ready and went on with other work (TryNext returned
// kPending) is not waiting, so the workers must not hold back the slots of
// later batches for it (Scheduler::HoldsBackNewSlotLocked): while it is
// away they fill the prefetch it allows, max(2, num_workers *
// prefetch_factor) batches. Bounded: ~0.6 s; a loader that stalls fails
// the timing checks, it cannot hang (every wait is a TryNext with a limit).
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

constexpr int64_t kBatch = 64;

// Sample i: "index" = i, after sleeping 1 ms (a batch takes ~32 ms with 2
// workers).
class MillisecondRows : public Dataset {
 public:
  explicit MillisecondRows(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    CheckIndex(index, n_);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    out.SetScalar<int64_t>("index", index);
  }
  std::vector<FieldSpec> FixedFields() const override { return {{"index", DType::kI64, Shape{}}}; }

 private:
  int64_t n_;
};

void ExpectBatch(const Batch& batch, int64_t batch_index) {
  ASSERT_EQ(batch.size(), kBatch);
  const int64_t* index = batch["index"].data<int64_t>();
  for (int64_t r = 0; r < kBatch; ++r) ASSERT_EQ(index[r], batch_index * kBatch + r);
}

TEST(SlotHoldBack, APollingLoopThatWentAwayGetsItsPrefetch) {
  LoaderOptions options;
  options.worker_mode = WorkerMode::kProcess;
  options.num_workers = 2;
  options.prefetch_factor = 2;  // up to 4 slots: the held batch and 3 ahead
  options.batch_size = kBatch;
  DataLoader loader(std::make_shared<MillisecondRows>(8 * kBatch), options);

  // The first batch, polled for as a loop with other work does.
  Batch first;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (loader.TryNext(std::chrono::milliseconds(0), &first) == NextStatus::kPending) {
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "no first batch in 20 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ExpectBatch(first, 0);
  // Batch 1 is loading: this poll finds nothing, and the loop goes away for
  // 600 ms, keeping batch 0 (~6x the ~100 ms that batches 1-3 take).
  Batch next;
  ASSERT_EQ(loader.TryNext(std::chrono::milliseconds(0), &next), NextStatus::kPending);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));

  // Back: batches 1, 2 and 3 were loaded meanwhile, ready without a wait.
  for (int64_t b = 1; b <= 3; ++b) {
    Batch batch;
    ASSERT_EQ(loader.TryNext(std::chrono::milliseconds(0), &batch), NextStatus::kBatch)
        << "batch " << b << " was not loaded while the loop was away";
    ExpectBatch(batch, b);
  }
  EXPECT_EQ(loader.stats().slots, 4);
}

}  // namespace
}  // namespace feedline
