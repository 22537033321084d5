#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"

namespace feedline {
namespace {

using Batches = std::vector<std::vector<int64_t>>;

// ---------------------------------------------------------------------------
// An independent re-implementation of paddle.io.DistributedBatchSampler
// (shuffle=False), written as straight-line as Paddle's Python:
//
//   num_samples = ceil(N / nranks); total_size = num_samples * nranks
//   indices = list(range(N))
//   padding = total_size - len(indices)
//   if padding <= len(indices): indices += indices[:padding]
//   else: indices += (indices * ceil(padding / len(indices)))[:padding]
//   if nranks > 1: indices = _get_indices_by_batch_size(indices)
//   then yield batches of batch_size, the short last one unless drop_last.

std::vector<int64_t> PaddlePad(int64_t n, int64_t nranks) {
  const int64_t num_samples = static_cast<int64_t>(std::ceil(static_cast<double>(n) / nranks));
  const int64_t total_size = num_samples * nranks;
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < n; ++i) indices.push_back(i);
  const int64_t padding = total_size - static_cast<int64_t>(indices.size());
  if (padding <= static_cast<int64_t>(indices.size())) {
    indices.insert(indices.end(), indices.begin(), indices.begin() + padding);
  } else {
    const int64_t copies = static_cast<int64_t>(
        std::ceil(static_cast<double>(padding) / static_cast<double>(indices.size())));
    std::vector<int64_t> repeated;
    for (int64_t c = 0; c < copies; ++c)
      repeated.insert(repeated.end(), indices.begin(), indices.end());
    indices.insert(indices.end(), repeated.begin(), repeated.begin() + padding);
  }
  EXPECT_EQ(static_cast<int64_t>(indices.size()), total_size);
  return indices;
}

// Paddle's _get_indices_by_batch_size for one rank.
std::vector<int64_t> PaddleSplit(const std::vector<int64_t>& indices, int64_t nranks, int64_t rank,
                                 int64_t batch_size) {
  if (nranks == 1) return indices;
  const int64_t total_size = static_cast<int64_t>(indices.size());
  std::vector<int64_t> subsampled;
  const int64_t last_batch_size = total_size % (batch_size * nranks);
  EXPECT_EQ(last_batch_size % nranks, 0);
  const int64_t last_local_batch_size = last_batch_size / nranks;
  for (int64_t i = rank * batch_size; i < total_size - last_batch_size; i += batch_size * nranks) {
    for (int64_t k = i; k < i + batch_size; ++k)
      subsampled.push_back(indices[static_cast<size_t>(k)]);
  }
  const int64_t tail = total_size - last_batch_size;
  for (int64_t k = tail + rank * last_local_batch_size;
       k < tail + (rank + 1) * last_local_batch_size; ++k) {
    subsampled.push_back(indices[static_cast<size_t>(k)]);
  }
  return subsampled;
}

Batches PaddleBatches(const std::vector<int64_t>& local, int64_t batch_size, bool drop_last) {
  Batches batches;
  std::vector<int64_t> batch;
  for (int64_t idx : local) {
    batch.push_back(idx);
    if (static_cast<int64_t>(batch.size()) == batch_size) {
      batches.push_back(batch);
      batch.clear();
    }
  }
  if (!drop_last && !batch.empty()) batches.push_back(batch);
  return batches;
}

// ---------------------------------------------------------------------------

Batches ToBatches(const EpochPlan& plan) {
  Batches out;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    out.emplace_back(plan.batch(b).begin(), plan.batch(b).end());
  }
  return out;
}

struct Case {
  int64_t n;
  int64_t replicas;
  int64_t batch_size;
  bool drop_last;
};

std::string Describe(const Case& c) {
  return "N=" + std::to_string(c.n) + " R=" + std::to_string(c.replicas) +
         " bs=" + std::to_string(c.batch_size) + " drop_last=" + (c.drop_last ? "1" : "0");
}

void PrintTo(const Case& c, std::ostream* out) { *out << Describe(c); }

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return "N" + std::to_string(c.n) + "_R" + std::to_string(c.replicas) + "_bs" +
         std::to_string(c.batch_size) + (c.drop_last ? "_drop" : "_keep");
}

// Checks every rank of `c` (shuffle=False) against the Paddle model.
void ExpectMatchesPaddle(const Case& c) {
  const std::vector<int64_t> padded = PaddlePad(c.n, c.replicas);
  const int64_t num_samples = static_cast<int64_t>(padded.size()) / c.replicas;
  const int64_t paddle_len = (num_samples + (c.drop_last ? 0 : c.batch_size - 1)) / c.batch_size;
  for (int64_t rank = 0; rank < c.replicas; ++rank) {
    SCOPED_TRACE(Describe(c) + " rank=" + std::to_string(rank));
    const std::vector<int64_t> local = PaddleSplit(padded, c.replicas, rank, c.batch_size);
    ASSERT_EQ(static_cast<int64_t>(local.size()), num_samples);
    DistributedBatchSampler sampler(c.n, c.batch_size, c.replicas, rank, /*shuffle=*/false,
                                    c.drop_last, /*seed=*/7);
    EXPECT_EQ(sampler.num_samples(), num_samples);
    EXPECT_EQ(sampler.RankIndices(0), local);
    EXPECT_EQ(ToBatches(sampler.Plan(0)), PaddleBatches(local, c.batch_size, c.drop_last));
    EXPECT_EQ(sampler.size(), paddle_len);
    EXPECT_EQ(sampler.Plan(0).num_batches(), paddle_len);
    // Without shuffle the epoch and seed change nothing.
    EXPECT_EQ(sampler.RankIndices(5), local);
  }
}

class DistributedMatchesPaddleTest : public ::testing::TestWithParam<Case> {};

TEST_P(DistributedMatchesPaddleTest, SameBatchesAsPaddle) { ExpectMatchesPaddle(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Table, DistributedMatchesPaddleTest,
    ::testing::Values(Case{10, 4, 2, false}, Case{10, 4, 2, true},  // the worked example
                      Case{1, 1, 1, false}, Case{1, 4, 3, false},   // N = 1
                      Case{1, 4, 3, true}, Case{3, 8, 2, false},    // N < R
                      Case{2, 5, 1, true}, Case{5, 16, 4, false},   // padding > N
                      Case{12, 4, 3, false}, Case{16, 4, 2, true},  // N divisible
                      Case{17, 4, 2, false}, Case{17, 4, 2, true},  // one short
                      Case{100, 3, 7, false}, Case{100, 3, 7, true}, Case{101, 8, 5, false},
                      Case{7, 1, 3, false},                               // single rank
                      Case{7, 1, 3, true}, Case{0, 3, 2, false},          // empty
                      Case{64, 8, 64, false}, Case{65, 2, 1000, false}),  // batch > share
    CaseName);

TEST(DistributedBatchSamplerTest, WorkedExampleLiterally) {
  // N=10, R=4, bs=2: total 12, padded with indices 0 and 1 (i10=0, i11=1).
  const Batches expected[4] = {{{0, 1}, {8}}, {{2, 3}, {9}}, {{4, 5}, {0}}, {{6, 7}, {1}}};
  for (int64_t rank = 0; rank < 4; ++rank) {
    DistributedBatchSampler sampler(10, 2, 4, rank);
    EXPECT_EQ(ToBatches(sampler.Plan(0)), expected[rank]) << rank;
    EXPECT_EQ(sampler.size(), 2);
    DistributedBatchSampler dropping(10, 2, 4, rank, /*shuffle=*/false, /*drop_last=*/true);
    EXPECT_EQ(ToBatches(dropping.Plan(0)), Batches{expected[rank][0]}) << rank;
    EXPECT_EQ(dropping.size(), 1);
  }
}

TEST(DistributedBatchSamplerTest, HugeBatchSizeActsLikeAnyOversizedBatch) {
  // Every batch_size above a rank's share gives the same split; the largest
  // one must not overflow batch_size * num_replicas.
  const int64_t huge = std::numeric_limits<int64_t>::max();
  for (int64_t rank = 0; rank < 4; ++rank) {
    DistributedBatchSampler big(10, huge, 4, rank);
    DistributedBatchSampler just_above(10, 4, 4, rank);  // share is 3
    EXPECT_EQ(big.RankIndices(0), just_above.RankIndices(0)) << rank;
    EXPECT_EQ(big.size(), 1);
    EXPECT_EQ(ToBatches(big.Plan(0)), ToBatches(just_above.Plan(0)));
    EXPECT_EQ(DistributedBatchSampler(10, huge, 4, rank, false, /*drop_last=*/true).size(), 0);
  }
}

TEST(DistributedBatchSamplerTest, MatchesPaddleOverAGrid) {
  for (int64_t n : {0, 1, 2, 3, 5, 8, 10, 13, 31, 64, 97}) {
    for (int64_t replicas : {1, 2, 3, 4, 7, 8}) {
      for (int64_t batch_size : {1, 2, 3, 5, 16}) {
        for (bool drop_last : {false, true}) {
          ExpectMatchesPaddle(Case{n, replicas, batch_size, drop_last});
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// shuffle=True: where feedline differs from Paddle on purpose. Paddle pads
// with items 0..pad-1 and then shuffles, so the duplicated samples are the
// same every epoch; feedline shuffles first and pads with the head of the
// shuffled order, so the duplicates rotate.

class DistributedShuffleTest : public ::testing::TestWithParam<Case> {};

TEST_P(DistributedShuffleTest, CoversAllEqualCountsRotatingDuplicates) {
  const Case c = GetParam();
  SCOPED_TRACE(Describe(c));
  const int64_t num_samples = (c.n + c.replicas - 1) / c.replicas;
  const int64_t total = num_samples * c.replicas;
  const int64_t padding = total - c.n;
  // Which global position each rank's k-th index comes from: Paddle's split
  // applied to the positions 0..total-1.
  std::vector<int64_t> positions(static_cast<size_t>(total));
  std::iota(positions.begin(), positions.end(), int64_t{0});

  std::set<std::multiset<int64_t>> duplicate_sets;
  std::set<std::vector<int64_t>> orders;
  bool some_epoch_unlike_paddle = false;
  for (int64_t epoch = 0; epoch < 8; ++epoch) {
    std::vector<int64_t> global(static_cast<size_t>(total), -1);
    std::set<int64_t> covered;
    int64_t expected_batches = -1;
    for (int64_t rank = 0; rank < c.replicas; ++rank) {
      DistributedBatchSampler sampler(c.n, c.batch_size, c.replicas, rank, /*shuffle=*/true,
                                      c.drop_last, /*seed=*/3);
      const std::vector<int64_t> local = sampler.RankIndices(epoch);
      ASSERT_EQ(static_cast<int64_t>(local.size()), num_samples);  // equal counts
      const int64_t batches = sampler.Plan(epoch).num_batches();
      EXPECT_EQ(batches, sampler.size());
      if (expected_batches < 0) expected_batches = batches;
      EXPECT_EQ(batches, expected_batches) << "rank " << rank;  // equal step counts
      const std::vector<int64_t> where = PaddleSplit(positions, c.replicas, rank, c.batch_size);
      for (size_t k = 0; k < local.size(); ++k) {
        global[static_cast<size_t>(where[k])] = local[k];
        covered.insert(local[k]);
      }
    }
    // The union over ranks covers every index.
    ASSERT_EQ(static_cast<int64_t>(covered.size()), c.n);
    // The global order is a permutation padded with its own head.
    std::vector<int64_t> head(global.begin(), global.begin() + c.n);
    orders.insert(head);
    std::sort(head.begin(), head.end());
    for (int64_t i = 0; i < c.n; ++i) ASSERT_EQ(head[static_cast<size_t>(i)], i);
    std::multiset<int64_t> duplicates;
    for (int64_t k = 0; k < padding; ++k) {
      ASSERT_EQ(global[static_cast<size_t>(c.n + k)], global[static_cast<size_t>(k % c.n)]);
      duplicates.insert(global[static_cast<size_t>(c.n + k)]);
    }
    duplicate_sets.insert(duplicates);
    std::multiset<int64_t> paddle_duplicates;
    for (int64_t k = 0; k < padding; ++k) paddle_duplicates.insert(k % c.n);
    if (duplicates != paddle_duplicates) some_epoch_unlike_paddle = true;
  }
  EXPECT_EQ(orders.size(), 8u);  // a new order every epoch
  if (padding > 0 && padding < c.n) {
    EXPECT_GT(duplicate_sets.size(), 1u);  // duplicates differ between epochs
    EXPECT_TRUE(some_epoch_unlike_paddle);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, DistributedShuffleTest,
                         ::testing::Values(Case{10, 4, 2, false}, Case{10, 4, 2, true},
                                           Case{13, 4, 3, false}, Case{50, 3, 4, false},
                                           Case{50, 3, 4, true}, Case{97, 8, 5, false},
                                           Case{101, 2, 7, true}, Case{12, 4, 3, false},
                                           Case{5, 8, 2, false}),
                         CaseName);

TEST(DistributedBatchSamplerTest, ShuffleDependsOnSeedAndEpochOnly) {
  DistributedBatchSampler a(100, 4, 2, 1, /*shuffle=*/true, false, /*seed=*/5);
  DistributedBatchSampler b(100, 4, 2, 1, /*shuffle=*/true, false, /*seed=*/5);
  DistributedBatchSampler other(100, 4, 2, 1, /*shuffle=*/true, false, /*seed=*/6);
  EXPECT_EQ(a.RankIndices(2), b.RankIndices(2));
  EXPECT_NE(a.RankIndices(2), a.RankIndices(3));
  EXPECT_NE(a.RankIndices(2), other.RankIndices(2));
}

TEST(DistributedBatchSamplerTest, SetEpochPinsTheEpoch) {
  DistributedBatchSampler sampler(40, 4, 2, 0, /*shuffle=*/true);
  EXPECT_FALSE(sampler.pinned_epoch().has_value());
  const EpochPlan before = sampler.Plan(3);
  sampler.set_epoch(3);
  ASSERT_TRUE(sampler.pinned_epoch().has_value());
  EXPECT_EQ(*sampler.pinned_epoch(), 3);
  // Plan stays a pure function of its argument.
  EXPECT_EQ(sampler.Plan(3).indices, before.indices);
  sampler.set_epoch(0);
  EXPECT_EQ(sampler.pinned_epoch(), std::optional<int64_t>(0));
  sampler.set_epoch(-1);
  EXPECT_FALSE(sampler.pinned_epoch().has_value());
  // Reachable through the interface the loader uses.
  const BatchSampler& base = sampler;
  sampler.set_epoch(9);
  EXPECT_EQ(base.pinned_epoch(), std::optional<int64_t>(9));
}

TEST(DistributedBatchSamplerTest, RejectsBadArguments) {
  auto error_of = [](int64_t n, int64_t bs, int64_t replicas, int64_t rank) -> std::string {
    try {
      DistributedBatchSampler sampler(n, bs, replicas, rank);
    } catch (const IndexError& e) {
      return std::string("IndexError: ") + e.what();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error_of(10, 0, 2, 0).find("batch_size must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(error_of(10, 2, 0, 0).find("num_replicas must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(error_of(-1, 2, 2, 0).find("dataset_size must be >= 0, got -1"), std::string::npos);
  EXPECT_NE(error_of(10, 2, 2, 2).find("IndexError: "), std::string::npos);
  EXPECT_NE(error_of(10, 2, 2, 2).find("rank must be in [0, 2), got 2"), std::string::npos);
  EXPECT_NE(error_of(10, 2, 2, -1).find("IndexError: "), std::string::npos);
  EXPECT_THROW(DistributedBatchSampler(10, 2, 2, 0).Plan(-1), Error);
}

// ---------------------------------------------------------------------------
// partition = kTorch: torch.utils.data.DistributedSampler's index assignment
// (shuffle=False, drop_last=False), re-implemented from its __iter__:
//   indices = list(range(n)); padding_size = total_size - len(indices)
//   if padding_size <= len(indices): indices += indices[:padding_size]
//   else: indices += (indices * ceil(padding_size / len(indices)))[:padding_size]
//   indices = indices[rank:total_size:num_replicas]
// python/tests/io/test_samplers.py also compares with torch itself.

std::vector<int64_t> TorchIndices(int64_t n, int64_t replicas, int64_t rank) {
  const int64_t num_samples = (n + replicas - 1) / replicas;
  const int64_t total_size = num_samples * replicas;
  std::vector<int64_t> indices = PaddlePad(n, replicas);  // the same padding rule
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < total_size; i += replicas) mine.push_back(indices[i]);
  return mine;
}

DistributedBatchSampler::Options TorchOptions(bool shuffle = false, bool drop_last = false) {
  DistributedBatchSampler::Options o;
  o.partition = DistributedPartition::kTorch;
  o.shuffle = shuffle;
  o.drop_last = drop_last;
  o.seed = 11;
  return o;
}

TEST(DistributedBatchSamplerTest, TorchPartitionMatchesTorchWithoutShuffle) {
  for (int64_t n : {0, 1, 2, 5, 10, 13, 64, 97}) {
    for (int64_t replicas : {1, 2, 3, 4, 8}) {
      for (int64_t batch_size : {1, 3, 16}) {
        for (int64_t rank = 0; rank < replicas; ++rank) {
          SCOPED_TRACE("n=" + std::to_string(n) + " R=" + std::to_string(replicas) +
                       " bs=" + std::to_string(batch_size) + " rank=" + std::to_string(rank));
          const std::vector<int64_t> expected =
              n == 0 ? std::vector<int64_t>{} : TorchIndices(n, replicas, rank);
          DistributedBatchSampler sampler(n, batch_size, replicas, rank, TorchOptions());
          EXPECT_EQ(sampler.RankIndices(0), expected);
          EXPECT_EQ(ToBatches(sampler.Plan(0)), PaddleBatches(expected, batch_size, false));
          EXPECT_EQ(sampler.size(), sampler.Plan(0).num_batches());
        }
      }
    }
  }
}

TEST(DistributedBatchSamplerTest, TorchPartitionWithShuffleStridesTheSameGlobalOrder) {
  // With shuffle the permutation is feedline's (Philox + Fisher-Yates), not
  // torch.randperm's, but the structure is torch's: the shuffled order padded
  // with its head and strided by rank; the global order is the paddle one's.
  const int64_t n = 23, replicas = 4;
  DistributedBatchSampler::Options paddle_options;
  paddle_options.shuffle = true;
  paddle_options.seed = 11;
  const std::vector<int64_t> global =
      DistributedBatchSampler(n, 1, 1, 0, paddle_options).RankIndices(3);
  for (int64_t rank = 0; rank < replicas; ++rank) {
    DistributedBatchSampler sampler(n, 2, replicas, rank, TorchOptions(/*shuffle=*/true));
    std::vector<int64_t> expected;
    for (int64_t i = rank; i < 24; i += replicas) expected.push_back(global[i % n]);
    EXPECT_EQ(sampler.RankIndices(3), expected) << rank;
  }
}

// ---------------------------------------------------------------------------
// pad = false: exact evaluation.

struct Split {
  DistributedPartition partition;
  bool pad;
  bool shuffle;
};

DistributedBatchSampler MakeSampler(int64_t n, int64_t batch_size, int64_t replicas, int64_t rank,
                                    Split split, int64_t resume_epoch = -1,
                                    int64_t resume_position = 0) {
  DistributedBatchSampler::Options o;
  o.partition = split.partition;
  o.pad = split.pad;
  o.shuffle = split.shuffle;
  o.seed = 5;
  o.resume_epoch = resume_epoch;
  o.resume_position = resume_position;
  return DistributedBatchSampler(n, batch_size, replicas, rank, o);
}

TEST(DistributedBatchSamplerTest, WithoutPadEverySampleIsSeenExactlyOnce) {
  for (DistributedPartition partition :
       {DistributedPartition::kPaddle, DistributedPartition::kTorch}) {
    for (bool shuffle : {false, true}) {
      for (int64_t n : {0, 1, 2, 3, 7, 10, 16, 31, 64, 97, 100}) {
        for (int64_t replicas : {1, 2, 3, 4, 7, 8}) {
          for (int64_t batch_size : {1, 2, 3, 5, 16, 200}) {
            SCOPED_TRACE("n=" + std::to_string(n) + " R=" + std::to_string(replicas) +
                         " bs=" + std::to_string(batch_size) +
                         " torch=" + std::to_string(partition == DistributedPartition::kTorch) +
                         " shuffle=" + std::to_string(shuffle));
            std::vector<int64_t> seen_count(static_cast<size_t>(n), 0);
            int64_t total = 0, most_batches = 0, fewest_batches = n + 1;
            for (int64_t rank = 0; rank < replicas; ++rank) {
              DistributedBatchSampler sampler =
                  MakeSampler(n, batch_size, replicas, rank, {partition, false, shuffle});
              const EpochPlan plan = sampler.Plan(2);
              EXPECT_EQ(plan.num_batches(), sampler.size());
              EXPECT_EQ(static_cast<int64_t>(plan.indices.size()), sampler.num_samples());
              for (int64_t b = 0; b < plan.num_batches(); ++b) {
                // Only a rank's last batch may be short.
                if (b + 1 < plan.num_batches()) {
                  EXPECT_EQ(static_cast<int64_t>(plan.batch(b).size()), batch_size);
                }
                for (int64_t index : plan.batch(b)) {
                  ASSERT_GE(index, 0);
                  ASSERT_LT(index, n);
                  ++seen_count[static_cast<size_t>(index)];
                  ++total;
                }
              }
              most_batches = std::max(most_batches, plan.num_batches());
              fewest_batches = std::min(fewest_batches, plan.num_batches());
            }
            EXPECT_EQ(total, n);
            for (int64_t i = 0; i < n; ++i) {
              ASSERT_EQ(seen_count[static_cast<size_t>(i)], 1) << "sample " << i;
            }
            EXPECT_LE(most_batches - fewest_batches, 1);
          }
        }
      }
    }
  }
}

TEST(DistributedBatchSamplerTest, WithoutPadPaddleDealsBlocksRoundRobin) {
  // n=10, R=4, bs=2: blocks [0,1] [2,3] [4,5] [6,7] [8,9]; block 4 goes to rank 0.
  const Batches expected[4] = {{{0, 1}, {8, 9}}, {{2, 3}}, {{4, 5}}, {{6, 7}}};
  for (int64_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(
        ToBatches(
            MakeSampler(10, 2, 4, rank, {DistributedPartition::kPaddle, false, false}).Plan(0)),
        expected[rank]);
  }
  // torch's stride without padding: rank r takes r, r + 4, ...
  EXPECT_EQ(
      ToBatches(MakeSampler(10, 2, 4, 1, {DistributedPartition::kTorch, false, false}).Plan(0)),
      (Batches{{1, 5}, {9}}));
  EXPECT_EQ(
      ToBatches(MakeSampler(10, 2, 4, 3, {DistributedPartition::kTorch, false, false}).Plan(0)),
      (Batches{{3, 7}}));
}

// ---------------------------------------------------------------------------
// Resume with another world size.

// The samples every rank of a W-rank job has taken after k batches each.
std::vector<int64_t> ConsumedAfter(int64_t n, int64_t batch_size, int64_t replicas, Split split,
                                   int64_t epoch, int64_t k, int64_t resume_epoch,
                                   int64_t resume_position) {
  std::vector<int64_t> consumed;
  for (int64_t rank = 0; rank < replicas; ++rank) {
    const EpochPlan plan =
        MakeSampler(n, batch_size, replicas, rank, split, resume_epoch, resume_position)
            .Plan(epoch);
    const int64_t taken = std::min(k, plan.num_batches());
    consumed.insert(consumed.end(), plan.indices.begin(),
                    plan.indices.begin() + plan.offsets[static_cast<size_t>(taken)]);
  }
  return consumed;
}

TEST(DistributedBatchSamplerTest, ResumingWithAnotherWorldSizeSeesTheRestExactlyOnce) {
  const int64_t epoch = 1;
  int64_t checked = 0;
  for (DistributedPartition partition :
       {DistributedPartition::kPaddle, DistributedPartition::kTorch}) {
    for (bool pad : {true, false}) {
      for (int64_t n : {1, 7, 10, 31, 64, 97}) {
        for (int64_t batch_size : {1, 3, 4}) {
          for (int64_t before : {1, 2, 3, 8}) {
            const Split split{partition, pad, /*shuffle=*/true};
            const std::vector<int64_t> global =
                MakeSampler(n, 1, 1, 0, split).RankIndices(epoch);  // the global order
            const DistributedBatchSampler probe = MakeSampler(n, batch_size, before, 0, split);
            for (int64_t k = 0; k <= probe.size(); ++k) {
              SCOPED_TRACE("n=" + std::to_string(n) + " bs=" + std::to_string(batch_size) +
                           " W=" + std::to_string(before) + " k=" + std::to_string(k) +
                           " torch=" + std::to_string(partition == DistributedPartition::kTorch) +
                           " pad=" + std::to_string(pad));
              const int64_t position = probe.GlobalPosition(epoch, k);
              ASSERT_GE(position, 0);
              ASSERT_LE(position, n);
              // What the W ranks took is the order's prefix of that length
              // (padding duplicates of it aside).
              std::set<int64_t> consumed;
              for (int64_t index : ConsumedAfter(n, batch_size, before, split, epoch, k, -1, 0)) {
                consumed.insert(index);
              }
              const std::set<int64_t> prefix(global.begin(), global.begin() + position);
              ASSERT_EQ(consumed, prefix);
              for (int64_t after : {1, 2, 3, 5, 8}) {
                // The new job takes everything that is left.
                std::vector<int64_t> rest;
                for (int64_t rank = 0; rank < after; ++rank) {
                  const DistributedBatchSampler resumed =
                      MakeSampler(n, batch_size, after, rank, split, epoch, position);
                  const std::vector<int64_t> mine = resumed.Plan(epoch).indices;
                  rest.insert(rest.end(), mine.begin(), mine.end());
                  // The next epoch is whole again.
                  EXPECT_EQ(resumed.Plan(epoch + 1).indices,
                            MakeSampler(n, batch_size, after, rank, split).Plan(epoch + 1).indices);
                }
                std::multiset<int64_t> rest_set(rest.begin(), rest.end());
                std::set<int64_t> distinct(rest.begin(), rest.end());
                const std::set<int64_t> suffix(global.begin() + position, global.end());
                ASSERT_EQ(distinct, suffix) << "W'=" << after;
                if (pad) {
                  // Only the padding that gives every rank equal steps repeats.
                  EXPECT_LT(rest.size() - suffix.size(), static_cast<size_t>(after));
                } else {
                  EXPECT_EQ(rest.size(), suffix.size()) << "W'=" << after;
                }
                // Chained: the resumed job's own position after one more step.
                const DistributedBatchSampler resumed0 =
                    MakeSampler(n, batch_size, after, 0, split, epoch, position);
                const int64_t next = resumed0.GlobalPosition(epoch, 1);
                std::set<int64_t> chained(global.begin(), global.begin() + position);
                for (int64_t index :
                     ConsumedAfter(n, batch_size, after, split, epoch, 1, epoch, position)) {
                  chained.insert(index);
                }
                ASSERT_EQ(chained, std::set<int64_t>(global.begin(), global.begin() + next))
                    << "W'=" << after;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(DistributedBatchSamplerTest, RejectsABadResumePosition) {
  DistributedBatchSampler::Options o;
  o.resume_epoch = 0;
  o.resume_position = 11;
  try {
    DistributedBatchSampler sampler(10, 2, 2, 0, o);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("resume_position must be in [0, dataset_size = 10], got 11"),
        std::string::npos);
  }
  o.resume_position = 10;  // everything consumed: the epoch is empty
  EXPECT_EQ(DistributedBatchSampler(10, 2, 2, 0, o).Plan(0).num_batches(), 0);
  EXPECT_THROW(DistributedBatchSampler(10, 2, 2, 0).GlobalPosition(0, -1), Error);
  DistributedBatchSampler sampler(10, 2, 2, 0);
  EXPECT_THROW(sampler.ResumeFrom(0, -1), Error);
  EXPECT_THROW(sampler.ResumeFrom(-1, 0), Error);
}

TEST(DistributedBatchSamplerTest, ResumeFromEqualsTheResumeOptionAndPinsTheEpoch) {
  DistributedBatchSampler::Options o;
  o.shuffle = true;
  o.resume_epoch = 2;
  o.resume_position = 7;
  const DistributedBatchSampler built(30, 2, 3, 1, o);
  EXPECT_FALSE(built.pinned_epoch().has_value());
  DistributedBatchSampler later(30, 2, 3, 1, /*shuffle=*/true);
  const std::vector<int64_t> whole = later.RankIndices(2);
  later.ResumeFrom(2, 7);
  EXPECT_EQ(later.pinned_epoch(), std::optional<int64_t>(2));
  EXPECT_EQ(later.RankIndices(2), built.RankIndices(2));
  EXPECT_NE(later.RankIndices(2), whole);
  EXPECT_EQ(later.RankIndices(3), built.RankIndices(3));  // only that epoch is cut
  EXPECT_EQ(later.GlobalPosition(2, 0), 7);
}

TEST(DistributedBatchSamplerTest, TheValidMaskCountsEverySampleOnceWithEqualSteps) {
  for (DistributedPartition partition :
       {DistributedPartition::kPaddle, DistributedPartition::kTorch}) {
    for (int64_t n : {1, 2, 7, 10, 31, 97}) {
      for (int64_t replicas : {1, 2, 3, 4, 8}) {
        for (int64_t batch_size : {1, 3, 16}) {
          for (int64_t resume : {0, 3}) {
            SCOPED_TRACE("n=" + std::to_string(n) + " R=" + std::to_string(replicas) +
                         " bs=" + std::to_string(batch_size) + " resume=" + std::to_string(resume));
            if (resume > n) continue;
            std::vector<int64_t> valid;
            int64_t padded_rows = 0;
            for (int64_t rank = 0; rank < replicas; ++rank) {
              const DistributedBatchSampler sampler =
                  MakeSampler(n, batch_size, replicas, rank, {partition, true, true}, 0, resume);
              const EpochPlan plan = sampler.Plan(0);
              const std::vector<uint8_t> mask = sampler.ValidMask(0);
              ASSERT_EQ(mask.size(), plan.indices.size());
              for (size_t k = 0; k < mask.size(); ++k) {
                if (mask[k]) {
                  valid.push_back(plan.indices[k]);
                } else {
                  ++padded_rows;
                }
              }
            }
            std::sort(valid.begin(), valid.end());
            EXPECT_EQ(static_cast<int64_t>(valid.size()), n - resume);
            EXPECT_EQ(std::adjacent_find(valid.begin(), valid.end()), valid.end());
            EXPECT_EQ(padded_rows,
                      (n - resume + replicas - 1) / replicas * replicas - (n - resume));
          }
        }
      }
    }
  }
  // Without pad every row is valid; drop_last shortens the mask with the plan.
  const DistributedBatchSampler exact =
      MakeSampler(10, 3, 4, 0, {DistributedPartition::kTorch, false, false});
  EXPECT_EQ(exact.ValidMask(0), std::vector<uint8_t>(exact.Plan(0).indices.size(), 1));
  DistributedBatchSampler::Options o;
  o.drop_last = true;
  const DistributedBatchSampler dropping(10, 2, 4, 0, o);  // [0, 1] and the dropped [8]
  EXPECT_EQ(dropping.ValidMask(0), (std::vector<uint8_t>{1, 1}));
  // N=10, R=4, bs=2: ranks 2 and 3 end with the padding 0 and 1.
  EXPECT_EQ(DistributedBatchSampler(10, 2, 4, 2).ValidMask(0), (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(DistributedBatchSampler(10, 2, 4, 1).ValidMask(0), (std::vector<uint8_t>{1, 1, 1}));
}

}  // namespace
}  // namespace feedline
