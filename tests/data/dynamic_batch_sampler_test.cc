#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/dataset.h"
#include "feedline/error.h"
#include "feedline/rng.h"
#include "feedline/sampler.h"

namespace feedline {
namespace {

using Options = DynamicBatchSampler::Options;

// A long-tailed length distribution: most samples short, a few very long.
std::vector<int64_t> SkewedLengths(int64_t n, uint64_t seed) {
  Rng rng(seed, 0, 0);
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < n; ++i) {
    if (rng.Bernoulli(0.1)) {
      lengths.push_back(200 + static_cast<int64_t>(rng.UniformInt(800)));
    } else {
      lengths.push_back(10 + static_cast<int64_t>(rng.UniformInt(50)));
    }
  }
  return lengths;
}

// Padded tokens of a batch: count * longest.
int64_t Cost(std::span<const int64_t> batch, const std::vector<int64_t>& lengths) {
  int64_t longest = 0;
  for (int64_t i : batch) longest = std::max(longest, lengths[static_cast<size_t>(i)]);
  return static_cast<int64_t>(batch.size()) * longest;
}

// Padding tokens over the whole plan.
int64_t Waste(const EpochPlan& plan, const std::vector<int64_t>& lengths) {
  int64_t waste = 0;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    waste += Cost(plan.batch(b), lengths);
    for (int64_t i : plan.batch(b)) waste -= lengths[static_cast<size_t>(i)];
  }
  return waste;
}

void ExpectEachIndexOnce(const EpochPlan& plan, int64_t n) {
  std::vector<int64_t> sorted = plan.indices;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(static_cast<int64_t>(sorted.size()), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_EQ(plan.offsets.back(), n);
}

TEST(DynamicBatchSamplerTest, EveryBatchFitsTheBudget) {
  const std::vector<int64_t> lengths = SkewedLengths(3000, 1);
  for (int64_t max_tokens : {512, 1000, 4096}) {
    DynamicBatchSampler sampler(lengths, Options{.max_tokens = max_tokens, .seed = 2});
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      const EpochPlan plan = sampler.Plan(epoch);
      ExpectEachIndexOnce(plan, 3000);
      for (int64_t b = 0; b < plan.num_batches(); ++b) {
        ASSERT_FALSE(plan.batch(b).empty());
        if (plan.batch(b).size() > 1) {
          ASSERT_LE(Cost(plan.batch(b), lengths), max_tokens) << "batch " << b;
        }
      }
    }
  }
}

TEST(DynamicBatchSamplerTest, OverlongSampleGetsABatchOfItsOwn) {
  const std::vector<int64_t> lengths = {10, 5000, 12, 9000, 11, 10};
  DynamicBatchSampler sampler(lengths, Options{.max_tokens = 100, .seed = 3});
  const EpochPlan plan = sampler.Plan(0);
  ExpectEachIndexOnce(plan, 6);
  int lone_overlong = 0;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const std::span<const int64_t> batch = plan.batch(b);
    for (int64_t i : batch) {
      if (lengths[static_cast<size_t>(i)] > 100) {
        EXPECT_EQ(batch.size(), 1u);
        ++lone_overlong;
      }
    }
  }
  EXPECT_EQ(lone_overlong, 2);
  // The four short ones (longest 12, 4 * 12 = 48 <= 100) share one batch.
  EXPECT_EQ(plan.num_batches(), 3);
}

TEST(DynamicBatchSamplerTest, BatchesAreFullWithoutShuffle) {
  // Sorted order, greedy cut: each batch would break the budget (or the cap)
  // by taking the first sample of the next one.
  const std::vector<int64_t> lengths = SkewedLengths(2000, 4);
  for (int64_t cap : {0, 16}) {
    DynamicBatchSampler sampler(
        lengths, Options{.max_tokens = 2048, .max_batch_size = cap, .shuffle = false});
    const EpochPlan plan = sampler.Plan(0);
    ExpectEachIndexOnce(plan, 2000);
    int64_t previous = 0;
    for (int64_t i : plan.indices) {
      ASSERT_GE(lengths[static_cast<size_t>(i)], previous);  // ascending length
      previous = lengths[static_cast<size_t>(i)];
    }
    for (int64_t b = 0; b + 1 < plan.num_batches(); ++b) {
      std::vector<int64_t> grown(plan.batch(b).begin(), plan.batch(b).end());
      grown.push_back(plan.batch(b + 1)[0]);
      const bool over_cap = cap > 0 && static_cast<int64_t>(grown.size()) > cap;
      EXPECT_TRUE(Cost(grown, lengths) > 2048 || over_cap) << "batch " << b;
      if (cap > 0) {
        EXPECT_LE(static_cast<int64_t>(plan.batch(b).size()), cap);
      }
    }
  }
}

TEST(DynamicBatchSamplerTest, MaxBatchSizeCapsEveryBatch) {
  const std::vector<int64_t> lengths(100, 1);
  DynamicBatchSampler sampler(lengths, Options{.max_tokens = 4096, .max_batch_size = 8});
  const EpochPlan plan = sampler.Plan(0);
  ExpectEachIndexOnce(plan, 100);
  EXPECT_EQ(plan.num_batches(), 13);  // 12 batches of 8 and one of 4
  for (int64_t b = 0; b < plan.num_batches(); ++b) EXPECT_LE(plan.batch(b).size(), 8u);
}

TEST(DynamicBatchSamplerTest, EmptySamplesCountAsOneToken) {
  const std::vector<int64_t> lengths(50, 0);
  DynamicBatchSampler sampler(lengths, Options{.max_tokens = 10});
  const EpochPlan plan = sampler.Plan(0);
  ExpectEachIndexOnce(plan, 50);
  EXPECT_EQ(plan.num_batches(), 5);
}

TEST(DynamicBatchSamplerTest, SameEpochSamePlanOtherEpochOtherOrder) {
  const std::vector<int64_t> lengths = SkewedLengths(1000, 5);
  DynamicBatchSampler a(lengths, Options{.max_tokens = 1024, .seed = 9});
  DynamicBatchSampler b(lengths, Options{.max_tokens = 1024, .seed = 9});
  const EpochPlan plan = a.Plan(3);
  EXPECT_EQ(b.Plan(3).indices, plan.indices);
  EXPECT_EQ(b.Plan(3).offsets, plan.offsets);
  EXPECT_EQ(a.Plan(3).indices, plan.indices);
  EXPECT_NE(a.Plan(4).indices, plan.indices);
  EXPECT_NE(DynamicBatchSampler(lengths, Options{.max_tokens = 1024, .seed = 10}).Plan(3).indices,
            plan.indices);
  // The batch order changes too, not only which equal-length sample goes where.
  std::vector<int64_t> first_lengths_3, first_lengths_4;
  const EpochPlan next = a.Plan(4);
  for (int64_t k = 0; k < 10; ++k) {
    first_lengths_3.push_back(lengths[static_cast<size_t>(plan.batch(k)[0])]);
    first_lengths_4.push_back(lengths[static_cast<size_t>(next.batch(k)[0])]);
  }
  EXPECT_NE(first_lengths_3, first_lengths_4);
}

TEST(DynamicBatchSamplerTest, WithoutShuffleEveryEpochIsTheSame) {
  const std::vector<int64_t> lengths = SkewedLengths(500, 6);
  DynamicBatchSampler sampler(lengths, Options{.max_tokens = 1024, .shuffle = false});
  EXPECT_EQ(sampler.Plan(0).indices, sampler.Plan(5).indices);
  EXPECT_EQ(sampler.Plan(0).offsets, sampler.Plan(5).offsets);
}

TEST(DynamicBatchSamplerTest, FarLessPaddingThanRandomFixedBatches) {
  const std::vector<int64_t> lengths = SkewedLengths(4000, 7);
  DynamicBatchSampler dynamic(lengths, Options{.max_tokens = 4096, .seed = 1});
  const EpochPlan plan = dynamic.Plan(0);
  ExpectEachIndexOnce(plan, 4000);
  // Random fixed batches of the same mean batch size.
  const int64_t batch_size = 4000 / plan.num_batches();
  ASSERT_GE(batch_size, 2);
  FixedBatchSampler fixed(std::make_shared<RandomSampler>(4000, 1), batch_size, false);
  const int64_t dynamic_waste = Waste(plan, lengths);
  const int64_t fixed_waste = Waste(fixed.Plan(0), lengths);
  EXPECT_LT(dynamic_waste * 10, fixed_waste)
      << "dynamic " << dynamic_waste << " vs fixed " << fixed_waste;
}

TEST(DynamicBatchSamplerTest, BucketsKeepBatchesInsideTheirBucket) {
  // Without shuffle bucket k holds indices [k * 100, (k + 1) * 100).
  const std::vector<int64_t> lengths = SkewedLengths(1000, 8);
  DynamicBatchSampler sampler(lengths,
                              Options{.max_tokens = 2048, .bucket_size = 100, .shuffle = false});
  const EpochPlan plan = sampler.Plan(0);
  ExpectEachIndexOnce(plan, 1000);
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    std::set<int64_t> buckets;
    for (int64_t i : plan.batch(b)) buckets.insert(i / 100);
    EXPECT_EQ(buckets.size(), 1u) << "batch " << b;
  }
  // Batches come bucket by bucket, each sorted by length.
  int64_t bucket = 0, previous = 0;
  for (int64_t i : plan.indices) {
    if (i / 100 != bucket) {
      ASSERT_EQ(i / 100, bucket + 1);
      bucket = i / 100;
      previous = 0;
    }
    ASSERT_GE(lengths[static_cast<size_t>(i)], previous);
    previous = lengths[static_cast<size_t>(i)];
  }
}

TEST(DynamicBatchSamplerTest, ShuffledBucketsStillFitAndCover) {
  const std::vector<int64_t> lengths = SkewedLengths(1000, 9);
  DynamicBatchSampler sampler(lengths, Options{.max_tokens = 1500, .bucket_size = 64, .seed = 4});
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const EpochPlan plan = sampler.Plan(epoch);
    ExpectEachIndexOnce(plan, 1000);
    for (int64_t b = 0; b < plan.num_batches(); ++b) {
      if (plan.batch(b).size() > 1) {
        ASSERT_LE(Cost(plan.batch(b), lengths), 1500);
      }
    }
  }
  EXPECT_NE(sampler.Plan(0).indices, sampler.Plan(1).indices);
}

TEST(DynamicBatchSamplerTest, SizeIsTheBatchCountOfEpochZero) {
  const std::vector<int64_t> lengths = SkewedLengths(700, 10);
  DynamicBatchSampler sampler(lengths, Options{.max_tokens = 900, .bucket_size = 50, .seed = 2});
  EXPECT_EQ(sampler.size(), sampler.Plan(0).num_batches());
  EXPECT_GT(sampler.size(), 1);
}

TEST(DynamicBatchSamplerTest, EmptyLengths) {
  DynamicBatchSampler sampler(std::vector<int64_t>{}, Options{});
  EXPECT_EQ(sampler.size(), 0);
  EXPECT_EQ(sampler.Plan(0).num_batches(), 0);
}

// Reports lengths; counts calls and fails if a sample is loaded.
class LengthsOnly : public Dataset {
 public:
  explicit LengthsOnly(std::vector<int64_t> lengths) : lengths_(std::move(lengths)) {}
  int64_t size() const override { return static_cast<int64_t>(lengths_.size()); }
  void Get(int64_t, Sample&, SampleContext&) const override {
    ADD_FAILURE() << "DynamicBatchSampler must not load samples";
  }
  int64_t Length(int64_t index) const override {
    ++length_calls_;
    return lengths_[static_cast<size_t>(index)];
  }
  int64_t length_calls() const { return length_calls_.load(); }

 private:
  std::vector<int64_t> lengths_;
  mutable std::atomic<int64_t> length_calls_{0};
};

TEST(DynamicBatchSamplerTest, ReadsLengthsFromTheDatasetOnce) {
  const std::vector<int64_t> lengths = SkewedLengths(300, 11);
  LengthsOnly dataset(lengths);
  const Options options{.max_tokens = 800, .seed = 5};
  DynamicBatchSampler from_dataset(dataset, options);
  EXPECT_EQ(dataset.length_calls(), 300);
  from_dataset.Plan(0);
  from_dataset.Plan(1);
  EXPECT_EQ(dataset.length_calls(), 300);
  DynamicBatchSampler from_vector(lengths, options);
  EXPECT_EQ(from_dataset.Plan(2).indices, from_vector.Plan(2).indices);
  EXPECT_EQ(from_dataset.Plan(2).offsets, from_vector.Plan(2).offsets);
}

class NoLengths : public Dataset {
 public:
  int64_t size() const override { return 3; }
  void Get(int64_t, Sample&, SampleContext&) const override {}
};

TEST(DynamicBatchSamplerTest, DatasetWithoutLengthsIsError) {
  NoLengths dataset;
  try {
    DynamicBatchSampler sampler(dataset, Options{});
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Length"), std::string::npos) << e.what();
  }
}

TEST(DynamicBatchSamplerTest, RejectsBadOptionsAndLengths) {
  auto error_of = [](std::vector<int64_t> lengths, Options options) -> std::string {
    try {
      DynamicBatchSampler sampler(std::move(lengths), options);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error_of({1}, Options{.max_tokens = 0}).find("max_tokens must be >= 1, got 0"),
            std::string::npos);
  EXPECT_NE(error_of({1}, Options{.max_batch_size = -1}).find("max_batch_size must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of({1}, Options{.bucket_size = -5}).find("got -5"), std::string::npos);
  EXPECT_NE(error_of({4, 2, -3}, Options{}).find("length of sample 2 must be >= 0, got -3"),
            std::string::npos);
  DynamicBatchSampler ok({1, 2}, Options{});
  EXPECT_THROW(ok.Plan(-1), Error);
}

}  // namespace
}  // namespace feedline
