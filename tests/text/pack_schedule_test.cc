#include "feedline/text/pack_schedule.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "feedline/text/token_dataset.h"

namespace feedline::text {
namespace {

std::vector<int64_t> Lengths(size_t n) {
  std::vector<int64_t> lengths(n);
  for (size_t i = 0; i < n; ++i) lengths[i] = static_cast<int64_t>(1 + (i * 37) % 300);
  return lengths;
}

bool SameRows(const PackPlan& a, const PackPlan& b) {
  if (a.row_offsets != b.row_offsets) return false;
  for (size_t i = 0; i < a.pieces.size(); ++i) {
    if (a.pieces[i].document != b.pieces[i].document || a.pieces[i].offset != b.pieces[i].offset ||
        a.pieces[i].length != b.pieces[i].length) {
      return false;
    }
  }
  return true;
}

TEST(PackScheduleTest, SameSeedAndEpochSameRowsAnotherEpochOthers) {
  PackOptions options;
  options.seq_len = 256;
  auto rows = [&](uint64_t seed, int64_t epoch) {
    PackSchedule schedule(Lengths(500), std::make_shared<RandomSampler>(500, seed), options);
    return schedule.Rows(epoch);
  };
  EXPECT_TRUE(SameRows(*rows(3, 1), *rows(3, 1)));
  EXPECT_FALSE(SameRows(*rows(3, 1), *rows(3, 2)));
  EXPECT_FALSE(SameRows(*rows(3, 1), *rows(4, 1)));
}

TEST(PackScheduleTest, ThreadsAskingTogetherGetTheSamePlan) {
  PackOptions options;
  options.seq_len = 128;
  PackSchedule schedule(Lengths(2000), std::make_shared<RandomSampler>(2000, 1), options);
  std::vector<std::shared_ptr<const PackPlan>> plans(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < plans.size(); ++t) {
    threads.emplace_back([&, t] { plans[t] = schedule.Rows(5); });
  }
  for (auto& t : threads) t.join();
  for (const auto& p : plans) EXPECT_TRUE(SameRows(*p, *plans[0]));
  EXPECT_EQ(schedule.Rows(5).get(), schedule.Rows(5).get());  // kept once planned
  // An older epoch is planned again when asked, with the same rows.
  const auto first = schedule.Rows(0);
  for (int64_t e = 1; e <= 4; ++e) schedule.Rows(e);
  EXPECT_TRUE(SameRows(*schedule.Rows(0), *first));
}

TEST(PackScheduleTest, MaxRowsBoundsEveryEpoch) {
  for (PackStrategy strategy :
       {PackStrategy::kBestFit, PackStrategy::kFirstFit, PackStrategy::kConcatSplit}) {
    PackOptions options;
    options.seq_len = 64;
    options.strategy = strategy;
    options.max_segments = 2;
    options.open_rows = 1;
    PackSchedule schedule(Lengths(300), std::make_shared<RandomSampler>(300, 2), options);
    for (int64_t e = 0; e < 10; ++e) EXPECT_LE(schedule.Rows(e)->num_rows(), schedule.max_rows());
  }
}

TEST(PackScheduleTest, LengthsOfReadsTheDataset) {
  TokenDataset docs({1, 2, 3, 4}, {0, 1, 4});
  EXPECT_EQ(LengthsOf(docs), (std::vector<int64_t>{1, 3}));
}

TEST(PackScheduleTest, BadArgumentsAreRefused) {
  PackOptions options;
  EXPECT_THROW(PackSchedule({1}, nullptr, options), Error);
  EXPECT_THROW(PackSchedule({-1}, std::make_shared<SequentialSampler>(1), options), Error);
  options.open_rows = 0;
  EXPECT_THROW(PackSchedule({1}, std::make_shared<SequentialSampler>(1), options), Error);
  // A sampler whose indices pass the documents is an IndexError when planned.
  PackSchedule short_lengths({1, 2}, std::make_shared<SequentialSampler>(3), PackOptions{});
  EXPECT_THROW(short_lengths.Rows(0), IndexError);
}

}  // namespace
}  // namespace feedline::text
