// EpochCursor (src/loader/epoch_cursor.h): which epoch runs, its plan, how
// far delivery got, and the epoch the next iteration runs. The plans come
// from an EpochPlanner, as the Scheduler's do.
#include "src/loader/epoch_cursor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "feedline/sampler.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const BatchSampler> Batches(int64_t samples, int64_t batch_size) {
  return std::make_shared<FixedBatchSampler>(std::make_shared<SequentialSampler>(samples),
                                             batch_size, /*drop_last=*/false);
}

// A batch sampler whose epoch is set through it, as DistributedBatchSampler's
// set_epoch does.
class PinnedBatches : public BatchSampler {
 public:
  explicit PinnedBatches(int64_t pinned) : pinned_(pinned) {}
  int64_t size() const override { return 1; }
  EpochPlan Plan(int64_t epoch) const override {
    EpochPlan plan;
    const int64_t row[] = {epoch};
    plan.Add(row);
    return plan;
  }
  std::optional<int64_t> pinned_epoch() const override { return pinned_; }

 private:
  int64_t pinned_;
};

PlannedEpoch Planned(const std::shared_ptr<const BatchSampler>& batches, int64_t epoch) {
  return EpochPlanner(batches, nullptr).Plan(epoch);
}

TEST(EpochCursor, StartPlansTheEpochAndDeliveryCountsFromTheFirstBatch) {
  const auto batches = Batches(10, 4);
  EpochCursor cursor(batches);
  EXPECT_FALSE(cursor.running());
  EXPECT_EQ(cursor.next_epoch(), 0);
  cursor.Start(Planned(batches, 3), 1);
  EXPECT_TRUE(cursor.running());
  EXPECT_EQ(cursor.epoch(), 3);
  EXPECT_EQ(cursor.next_epoch(), 4);
  EXPECT_EQ(cursor.plan().num_batches(), 3);
  EXPECT_EQ(cursor.delivered(), 1);
  EXPECT_EQ(cursor.next_to_deliver(), 1);
  cursor.AdvanceInOrder();
  cursor.CountDelivered();
  EXPECT_EQ(cursor.next_to_deliver(), 2);
  EXPECT_FALSE(cursor.all_delivered());
  cursor.CountDelivered();
  EXPECT_TRUE(cursor.all_delivered());
  cursor.End();
  EXPECT_FALSE(cursor.running());
  EXPECT_EQ(cursor.epoch(), 3);  // the last epoch run, for the loader's state
}

TEST(EpochCursor, AFirstBatchPastTheEndIsRefusedNamingTheEpoch) {
  const auto batches = Batches(10, 4);
  EpochCursor cursor(batches);
  EXPECT_THAT([&] { cursor.Start(Planned(batches, 2), 4); },
              ::testing::ThrowsMessage<Error>(HasSubstr("next_batch 4 is past the 3 batches of "
                                                        "epoch 2")));
  EXPECT_FALSE(cursor.running());
  EXPECT_EQ(cursor.next_epoch(), 0);  // a refused start changes nothing
  cursor.Start(Planned(batches, 2), 3);  // the end itself: an epoch with nothing left
  EXPECT_TRUE(cursor.all_delivered());
}

TEST(EpochCursor, APinnedEpochIsTheOneRunAndTheCounterFollowsIt) {
  const auto batches = std::make_shared<PinnedBatches>(7);
  EpochCursor cursor(batches);
  EXPECT_EQ(cursor.next_epoch(), 7);
  cursor.Start(Planned(batches, 0), 0);
  EXPECT_EQ(cursor.epoch(), 7);
  EXPECT_EQ(cursor.plan().batch(0)[0], 7);  // planned for the pinned epoch
}

TEST(EpochCursor, ThePlanHashIsThePlansAndChangesWithIt) {
  const auto one = std::make_shared<PinnedBatches>(1);
  EpochCursor cursor(one);
  cursor.Start(Planned(one, 0), 0);
  const std::string first = cursor.plan_hash();
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(cursor.plan_hash(), first);
  const auto two = std::make_shared<PinnedBatches>(2);
  EpochCursor other(two);
  other.Start(Planned(two, 0), 0);
  EXPECT_NE(other.plan_hash(), first);
}

TEST(EpochCursor, StreamEpochsCountOnWithoutAPlan) {
  EpochCursor cursor(nullptr);
  cursor.set_next_epoch(5);
  EXPECT_EQ(cursor.StartStream(), 5);
  EXPECT_TRUE(cursor.running());
  EXPECT_EQ(cursor.delivered(), 0);
  cursor.End();
  EXPECT_EQ(cursor.StartStream(), 6);
}

}  // namespace
}  // namespace feedline::internal
