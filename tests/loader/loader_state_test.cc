// Checkpoint and resume through the API users call: state() taken while
// iterating, Restore() on a new loader, then range-for.
#include "feedline/loader_state.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "feedline/data_loader.h"
#include "loader/test_datasets.h"
#include "testing/errors.h"

namespace feedline {
namespace {

using testing::IndexDataset;
using testing::Indices;

using Epoch = std::vector<std::vector<int64_t>>;

LoaderOptions StateOptions(int workers) {
  LoaderOptions o;
  o.batch_size = 5;
  o.shuffle = true;
  o.seed = 21;
  o.num_workers = workers;
  return o;
}

DataLoader MakeLoader(int workers, int64_t n = 40) {
  return DataLoader(std::make_shared<IndexDataset>(n), StateOptions(workers));
}

Epoch RangeFor(DataLoader& loader) {
  Epoch out;
  for (const Batch& b : loader) out.push_back(Indices(b));
  return out;
}

// Epochs 0..2 of an uninterrupted run.
std::vector<Epoch> Uninterrupted() {
  DataLoader loader = MakeLoader(2);
  std::vector<Epoch> epochs;
  for (int e = 0; e < 3; ++e) epochs.push_back(RangeFor(loader));
  return epochs;
}

Epoch Tail(const Epoch& epoch, size_t from) { return Epoch(epoch.begin() + from, epoch.end()); }

class ResumeTest : public ::testing::TestWithParam<int> {};  // workers of the resumed loader

TEST_P(ResumeTest, RangeForContinuesTheEpochThenRunsTheNext) {
  const std::vector<Epoch> expected = Uninterrupted();
  LoaderState state;
  {
    DataLoader first = MakeLoader(2);
    RangeFor(first);  // epoch 0
    int k = 0;
    for (const Batch& b : first) {  // epoch 1, interrupted after 3 batches
      (void)b;
      if (++k == 3) {
        state = first.state();
        break;
      }
    }
  }
  EXPECT_EQ(state.epoch, 1);
  EXPECT_EQ(state.next_batch, 3);

  DataLoader resumed = MakeLoader(GetParam());
  resumed.Restore(state);
  EXPECT_EQ(RangeFor(resumed), Tail(expected[1], 3));
  EXPECT_EQ(RangeFor(resumed), expected[2]);
}

TEST_P(ResumeTest, StateAfterTheLastBatchResumesToAnEmptyRestThenTheNextEpoch) {
  const std::vector<Epoch> expected = Uninterrupted();
  DataLoader first = MakeLoader(2);
  LoaderState state;
  for (const Batch& b : first) {
    (void)b;
    state = first.state();  // the last one is taken after the epoch's last batch
  }
  EXPECT_EQ(state.epoch, 0);
  EXPECT_EQ(state.next_batch, 8);

  DataLoader resumed = MakeLoader(GetParam());
  resumed.Restore(state);
  EXPECT_TRUE(RangeFor(resumed).empty());
  EXPECT_EQ(RangeFor(resumed), expected[1]);
}

TEST_P(ResumeTest, StateBetweenEpochsAndBeforeAnyStartsTheRightEpoch) {
  const std::vector<Epoch> expected = Uninterrupted();
  DataLoader fresh = MakeLoader(2);
  LoaderState unstarted = fresh.state();
  EXPECT_EQ(unstarted.epoch, 0);
  EXPECT_EQ(unstarted.next_batch, 0);
  RangeFor(fresh);
  RangeFor(fresh);
  LoaderState between = fresh.state();
  EXPECT_EQ(between.epoch, 2);
  EXPECT_EQ(between.next_batch, 0);

  DataLoader a = MakeLoader(GetParam());
  a.Restore(unstarted);
  EXPECT_EQ(RangeFor(a), expected[0]);
  DataLoader b = MakeLoader(GetParam());
  b.Restore(between);
  EXPECT_EQ(RangeFor(b), expected[2]);
}

TEST_P(ResumeTest, NextContinuesAsRangeForDoes) {
  const std::vector<Epoch> expected = Uninterrupted();
  DataLoader first = MakeLoader(1);
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(first.Next());
  DataLoader resumed = MakeLoader(GetParam());
  resumed.Restore(first.state());
  Epoch rest;
  while (std::optional<Batch> b = resumed.Next()) rest.push_back(Indices(*b));
  EXPECT_EQ(rest, Tail(expected[0], 5));
  EXPECT_EQ(RangeFor(resumed), expected[1]);
}

INSTANTIATE_TEST_SUITE_P(Workers, ResumeTest, ::testing::Values(0, 1, 3));

TEST(Resume, SetEpochOfTheRestoredEpochKeepsThePosition) {
  const std::vector<Epoch> expected = Uninterrupted();
  DataLoader first = MakeLoader(2);
  first.set_epoch(2);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(first.Next());
  DataLoader resumed = MakeLoader(2);
  resumed.Restore(first.state());
  resumed.set_epoch(2);  // a loop that sets the epoch before iterating
  EXPECT_EQ(RangeFor(resumed), Tail(expected[2], 2));

  DataLoader other = MakeLoader(2);
  other.Restore(first.state());
  other.set_epoch(0);  // another epoch: the restored position is dropped
  EXPECT_EQ(RangeFor(other), expected[0]);
}

TEST(Resume, BeginAfterConsumingARestoredEpochStartsAfresh) {
  const std::vector<Epoch> expected = Uninterrupted();
  DataLoader first = MakeLoader(2);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(first.Next());
  DataLoader resumed = MakeLoader(2);
  resumed.Restore(first.state());
  ASSERT_TRUE(resumed.Next());  // consumes the restore: batch 2 of epoch 0
  EXPECT_EQ(RangeFor(resumed), expected[1]);  // begin() abandons it, as documented
}

TEST(Resume, RefusesAStateOfAnotherLoaderNamingTheDifference) {
  DataLoader first = MakeLoader(2);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE(first.Next());
  const LoaderState state = first.state();

  DataLoader bigger = MakeLoader(2, 41);
  EXPECT_EQ(test::ErrorOf([&] { bigger.Restore(state); }),
            "Restore: the state belongs to another loader: dataset_size: the state was taken with "
            "40, this loader has 41");

  LoaderOptions reseeded = StateOptions(2);
  reseeded.seed = 22;
  DataLoader other_seed(std::make_shared<IndexDataset>(40), reseeded);
  EXPECT_EQ(test::ErrorOf([&] { other_seed.Restore(state); }),
            "Restore: the state belongs to another loader: seed: the state was taken with 21, "
            "this loader has 22");

  LoaderOptions sequential = StateOptions(2);
  sequential.shuffle = false;
  DataLoader in_order(std::make_shared<IndexDataset>(40), sequential);
  EXPECT_EQ(test::ErrorOf([&] { in_order.Restore(state); }),
            "Restore: the state belongs to another loader: sampler: the state was taken with "
            "'random', this loader has 'sequential'");

  // A refused state leaves the loader usable, at the epoch it was at.
  EXPECT_EQ(RangeFor(in_order).size(), 8u);
}

// A custom sampler's order is not described by the options: the digest of
// the epoch's batches catches a different one.
class ReversedSampler : public Sampler {
 public:
  explicit ReversedSampler(int64_t n, bool reversed) : n_(n), reversed_(reversed) {}
  int64_t size() const override { return n_; }
  std::vector<int64_t> Indices(int64_t) const override {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < n_; ++i) out.push_back(reversed_ ? n_ - 1 - i : i);
    return out;
  }

 private:
  int64_t n_;
  bool reversed_;
};

TEST(Resume, RefusesAnotherOrderOfACustomSamplerByItsDigest) {
  LoaderOptions o;
  o.batch_size = 4;
  o.sampler = std::make_shared<ReversedSampler>(20, true);
  DataLoader first(std::make_shared<IndexDataset>(20), o);
  ASSERT_TRUE(first.Next());
  const LoaderState state = first.state();
  EXPECT_EQ(state.fingerprint.sampler, "custom");
  EXPECT_EQ(state.fingerprint.plan_hash.size(), 16u);

  o.sampler = std::make_shared<ReversedSampler>(20, false);
  DataLoader other(std::make_shared<IndexDataset>(20), o);
  const std::string message = test::ErrorOf([&] { other.Restore(state); });
  EXPECT_NE(message.find("plan_hash: the state was taken with " + state.fingerprint.plan_hash),
            std::string::npos)
      << message;

  o.sampler = std::make_shared<ReversedSampler>(20, true);
  DataLoader same(std::make_shared<IndexDataset>(20), o);
  same.Restore(state);
  Epoch rest = RangeFor(same);
  ASSERT_EQ(rest.size(), 4u);
  EXPECT_EQ(rest[0], (std::vector<int64_t>{15, 14, 13, 12}));
}

TEST(Resume, AHandWrittenStateIsTrustedAndAPositionPastTheEndRefused) {
  const std::vector<Epoch> expected = Uninterrupted();
  DataLoader loader = MakeLoader(2);
  loader.Restore(LoaderState{1, 6});
  EXPECT_EQ(RangeFor(loader), Tail(expected[1], 6));
  EXPECT_EQ(test::ErrorOf([&] { loader.Restore(LoaderState{1, 9}); }),
            "Restore: next_batch 9 is past the 8 batches of epoch 1");
}

TEST(Resume, DistributedStateRecordsTheRanks) {
  LoaderOptions o;
  o.batch_sampler = std::make_shared<DistributedBatchSampler>(40, 4, 2, 1, true, false, 3);
  DataLoader rank1(std::make_shared<IndexDataset>(40), o);
  ASSERT_TRUE(rank1.Next());
  const LoaderState state = rank1.state();
  EXPECT_EQ(state.fingerprint.sampler, "distributed");
  EXPECT_EQ(state.fingerprint.num_replicas, 2);
  EXPECT_EQ(state.fingerprint.rank, 1);
  EXPECT_EQ(state.fingerprint.batch_size, 4);

  o.batch_sampler = std::make_shared<DistributedBatchSampler>(40, 4, 2, 0, true, false, 3);
  DataLoader rank0(std::make_shared<IndexDataset>(40), o);
  // Without the global position (a state written by hand, or by a version
  // before it), another rank's position means other batches: refused.
  LoaderState without_global = state;
  without_global.global = GlobalPosition{};
  EXPECT_EQ(test::ErrorOf([&] { rank0.Restore(without_global); }),
            "Restore: the state belongs to another loader: rank: the state was taken with 1, "
            "this loader has 0");
  // With it (what state() records), any rank continues the epoch from what
  // all ranks consumed (distributed_resume_test.cc).
  EXPECT_EQ(state.global.position, 8);
  EXPECT_EQ(test::ErrorOf([&] { rank0.Restore(state); }), "(no error)");
}

}  // namespace
}  // namespace feedline
