// A C++ resume at another world size: LoaderState carries the global
// position (what all ranks consumed), and Restore on a job of another size
// continues the epoch so that every sample no rank had seen is seen once.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/data_loader.h"
#include "test_datasets.h"

namespace feedline {
namespace {

using testing::IndexDataset;
using testing::Indices;

constexpr int64_t kSize = 50;

struct Rank {
  std::shared_ptr<DistributedBatchSampler> sampler;
  std::unique_ptr<DataLoader> loader;
};

Rank MakeRank(int64_t world, int64_t rank, uint64_t seed = 11, bool pad = false) {
  DistributedBatchSampler::Options o;
  o.shuffle = true;
  o.seed = seed;
  o.pad = pad;
  Rank r;
  r.sampler = std::make_shared<DistributedBatchSampler>(kSize, 3, world, rank, o);
  LoaderOptions options;
  options.batch_sampler = r.sampler;
  options.num_workers = 1;
  r.loader = std::make_unique<DataLoader>(std::make_shared<IndexDataset>(kSize), options);
  return r;
}

// The next `batches` batches of `rank` (-1: to the end of the epoch).
std::vector<int64_t> Take(Rank& rank, int batches) {
  std::vector<int64_t> seen;
  for (int b = 0; batches < 0 || b < batches; ++b) {
    std::optional<Batch> batch = rank.loader->Next();
    if (!batch) break;
    for (int64_t i : Indices(*batch)) seen.push_back(i);
  }
  return seen;
}

TEST(DistributedResumeTest, TheStateCarriesTheGlobalPosition) {
  Rank a = MakeRank(2, 0);
  Rank b = MakeRank(2, 1);
  Take(a, 4);
  Take(b, 4);
  const LoaderState sa = a.loader->state();
  const LoaderState sb = b.loader->state();
  EXPECT_EQ(sa.global.position, a.sampler->GlobalPosition(0, 4));
  EXPECT_EQ(sa.global.position, 24);  // 2 ranks x 4 batches x 3 samples
  EXPECT_EQ(sb.global.position, sa.global.position);
  EXPECT_EQ(sa.global.epoch_start, 0);
  EXPECT_EQ(sa.global.shuffle, 1);
  EXPECT_EQ(sa.global.seed, "11");
}

TEST(DistributedResumeTest, AJobOfAnotherWorldSizeSeesTheRestOnce) {
  // 2 ranks take 4 batches each of epoch 0, then the job restarts with 3.
  std::map<int64_t, int> count;
  LoaderState checkpoint;
  for (int64_t r = 0; r < 2; ++r) {
    Rank rank = MakeRank(2, r);
    for (int64_t i : Take(rank, 4)) ++count[i];
    if (r == 0) checkpoint = rank.loader->state();
  }
  for (int64_t r = 0; r < 3; ++r) {
    Rank rank = MakeRank(3, r);
    rank.loader->Restore(checkpoint);  // every rank restores the same state
    for (int64_t i : Take(rank, -1)) ++count[i];
    // The epoch after the resumed one is whole again.
    rank.sampler->set_epoch(1);
    EXPECT_EQ(static_cast<int64_t>(Take(rank, -1).size()),
              static_cast<int64_t>(rank.sampler->RankIndices(1).size()));
  }
  ASSERT_EQ(static_cast<int64_t>(count.size()), kSize);
  for (const auto& [index, n] : count) EXPECT_EQ(n, 1) << "sample " << index;
}

TEST(DistributedResumeTest, TheSameJobResumesExactly) {
  Rank a = MakeRank(2, 1, 11, /*pad=*/true);
  Take(a, 2);
  const LoaderState state = a.loader->state();
  const std::vector<int64_t> rest = Take(a, -1);
  Rank b = MakeRank(2, 1, 11, true);
  b.loader->Restore(state);
  EXPECT_EQ(Take(b, -1), rest);
}

TEST(DistributedResumeTest, AResumedEpochResumesAgainExactly) {
  // 2 ranks checkpoint; 3 ranks resume and checkpoint again; the same 3-rank
  // job resumes from that second checkpoint (its epoch starts at 12).
  Rank first = MakeRank(2, 0);
  Take(first, 2);
  const LoaderState at12 = first.loader->state();
  Rank c = MakeRank(3, 2);
  c.loader->Restore(at12);
  Take(c, 1);
  const LoaderState again = c.loader->state();
  EXPECT_EQ(again.global.epoch_start, 12);
  EXPECT_EQ(again.global.position, 12 + 9);
  const std::vector<int64_t> rest = Take(c, -1);
  Rank d = MakeRank(3, 2);
  d.loader->Restore(again);
  EXPECT_EQ(Take(d, -1), rest);
}

TEST(DistributedResumeTest, APositionOfAnotherOrderIsRefused) {
  Rank a = MakeRank(2, 0);
  Take(a, 1);
  const LoaderState state = a.loader->state();
  Rank other_seed = MakeRank(3, 0, /*seed=*/12);
  try {
    other_seed.loader->Restore(state);
    FAIL() << "accepted a position of another seed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "Restore: the global position belongs to another order: sampler seed: the state "
              "was taken with 11, this loader's sampler has 12");
  }
  LoaderState beyond = state;
  beyond.global.position = kSize + 1;
  Rank b = MakeRank(3, 0);
  EXPECT_THROW(b.loader->Restore(beyond), Error);
}

}  // namespace
}  // namespace feedline
