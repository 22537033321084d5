#include "feedline/text/mixed_dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "feedline/error.h"

namespace feedline::text {
namespace {

// Row i of source `tag` has field "x" = tag * 1000000 + i and length i + 1.
class Rows : public Dataset {
 public:
  Rows(int64_t tag, int64_t n) : tag_(tag), n_(n) {}
  int64_t size() const override { return n_; }
  void Get(int64_t i, Sample& out, SampleContext&) const override {
    CheckIndex(i, n_);
    out.SetScalar<int64_t>("x", tag_ * 1000000 + i);
  }
  std::string Source(int64_t i) const override { return "row " + std::to_string(i); }
  int64_t Length(int64_t i) const override { return i + 1; }

 private:
  int64_t tag_, n_;
};

std::vector<std::shared_ptr<const Dataset>> Sources(std::vector<int64_t> sizes) {
  std::vector<std::shared_ptr<const Dataset>> sources;
  for (size_t k = 0; k < sizes.size(); ++k) {
    sources.push_back(std::make_shared<Rows>(static_cast<int64_t>(k), sizes[k]));
  }
  return sources;
}

int64_t X(const Dataset& data, int64_t i) {
  Sample sample;
  SampleContext ctx(0, 0, i);
  data.Get(i, sample, ctx);
  return *sample["x"].data<int64_t>();
}

TEST(MixedDatasetTest, EveryWindowHoldsTheWeights) {
  MixOptions mix;
  mix.weights = {0.5, 0.3, 0.2};
  mix.stopping = MixStopping::kNever;
  mix.num_samples = 100000;
  mix.shuffle = {true, true, true};
  MixedDataset data(Sources({7000, 50000, 3}), mix);
  ASSERT_EQ(data.size(), 100000);
  const int64_t window = 10000;
  std::vector<int64_t> prefix(3, 0);
  std::vector<std::vector<int64_t>> counts(3, {0});
  for (int64_t i = 0; i < data.size(); ++i) {
    for (int k = 0; k < 3; ++k) counts[k].push_back(counts[k].back() + (data.source_of(i) == k));
  }
  for (int64_t start = 0; start + window <= data.size(); start += 1) {
    for (int k = 0; k < 3; ++k) {
      const double share =
          static_cast<double>(counts[k][start + window] - counts[k][start]) / window;
      ASSERT_NEAR(share, mix.weights[k], 0.005) << "window at " << start << ", source " << k;
    }
  }
}

TEST(MixedDatasetTest, FirstExhaustedEndsBeforeTheFirstSourceRunsOut) {
  MixOptions mix;
  mix.weights = {1, 1};
  MixedDataset data(Sources({10, 100}), mix);
  // Source 0 gives its 10 rows within the first 20 positions.
  EXPECT_EQ(data.size(), 20);
  EXPECT_EQ(data.DrawsBefore(data.size()), (std::vector<int64_t>{10, 10}));
  std::set<int64_t> xs;
  for (int64_t i = 0; i < data.size(); ++i) xs.insert(X(data, i));
  EXPECT_EQ(xs.size(), 20u);
}

TEST(MixedDatasetTest, AllExhaustedSeesEveryRowAndReshufflesAPass) {
  MixOptions mix;
  mix.weights = {1, 1};
  mix.stopping = MixStopping::kAllExhausted;
  mix.shuffle = {true, true};
  mix.seed = 3;
  MixedDataset data(Sources({10, 100}), mix);
  EXPECT_EQ(data.size(), 200);  // source 1's last row at position 199
  std::vector<std::vector<int64_t>> rows(2);
  for (int64_t i = 0; i < data.size(); ++i) rows[data.source_of(i)].push_back(data.row_of(i));
  ASSERT_EQ(rows[1].size(), 100u);
  EXPECT_EQ(std::set<int64_t>(rows[1].begin(), rows[1].end()).size(), 100u);
  ASSERT_GE(rows[0].size(), 20u);
  // Each pass over source 0 is a permutation, and passes differ.
  std::vector<int64_t> pass0(rows[0].begin(), rows[0].begin() + 10);
  std::vector<int64_t> pass1(rows[0].begin() + 10, rows[0].begin() + 20);
  EXPECT_EQ(std::set<int64_t>(pass0.begin(), pass0.end()).size(), 10u);
  EXPECT_EQ(std::set<int64_t>(pass1.begin(), pass1.end()).size(), 10u);
  EXPECT_NE(pass0, pass1);
}

TEST(MixedDatasetTest, AResumeWithOtherWeightsLosesAndRepeatsNoRow) {
  MixOptions before;
  before.weights = {0.5, 0.3, 0.2};
  before.shuffle = {true, false, true};
  before.seed = 8;
  auto sources = Sources({400, 300, 500});
  MixedDataset first(sources, before);
  const int64_t position = 250;
  MixOptions after = before;
  after.weights = {0.2, 0.2, 0.6};
  after.start = first.DrawsBefore(position);
  MixedDataset second(sources, after);
  std::vector<std::vector<int64_t>> rows(3);
  for (int64_t i = 0; i < position; ++i) rows[first.source_of(i)].push_back(first.row_of(i));
  for (int64_t i = 0; i < second.size(); ++i) rows[second.source_of(i)].push_back(second.row_of(i));
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(std::set<int64_t>(rows[k].begin(), rows[k].end()).size(), rows[k].size()) << k;
  }
  // Source 1 is not shuffled: its rows continue in order across the resume.
  for (size_t j = 0; j < rows[1].size(); ++j) EXPECT_EQ(rows[1][j], static_cast<int64_t>(j));
  // The second part has the new weights (source 2 runs out first now).
  EXPECT_EQ(second.DrawsBefore(second.size())[2], 500);
}

TEST(MixedDatasetTest, FieldsLengthsAndSources) {
  MixOptions mix;
  mix.weights = {0, 1};
  mix.source_field = "source";
  MixedDataset data(Sources({0, 5}), mix);
  ASSERT_EQ(data.size(), 5);
  Sample sample;
  SampleContext ctx(0, 0, 2);
  data.Get(2, sample, ctx);
  EXPECT_EQ(*sample["source"].data<int64_t>(), 1);
  EXPECT_EQ(*sample["x"].data<int64_t>(), 1000002);
  EXPECT_EQ(data.Length(2), 3);
  EXPECT_EQ(data.Source(2), "source 1: row 2");
  ASSERT_EQ(data.FixedFields().size(), 1u);
  EXPECT_EQ(data.FixedFields()[0].name, "source");
}

TEST(MixedDatasetTest, BadArgumentsAreRefusedByName) {
  auto sources = Sources({5, 5});
  auto refuses = [&](MixOptions mix, const std::string& words) {
    try {
      MixedDataset data(sources, mix);
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  MixOptions mix;
  mix.weights = {1};
  refuses(mix, "1 weights for 2 sources");
  mix.weights = {1, -1};
  refuses(mix, "source 1");
  mix.weights = {0, 0};
  refuses(mix, "all 0");
  mix.weights = {1, 1};
  mix.stopping = MixStopping::kNever;
  refuses(mix, "num_samples");
  EXPECT_THROW(MixedDataset(Sources({0, 5}), [] {
                 MixOptions m;
                 m.weights = {1, 1};
                 return m;
               }()),
               Error);
  EXPECT_THROW(ParseMixStopping("first"), Error);
}

// Rows that keep what the loader's plan told them.
class PlannedRows : public Rows {
 public:
  using Rows::Rows;
  void EpochOrder(std::span<const int64_t> order) const override {
    orders.emplace_back(order.begin(), order.end());
  }
  void EpochProgress(int64_t delivered) const override { progress.push_back(delivered); }

  mutable std::vector<std::vector<int64_t>> orders;
  mutable std::vector<int64_t> progress;
};

// Each source is told the rows the loader's order will ask it for, in that
// order, and how many of them the delivered prefix holds, as it would be
// alone (a Parquet source then reads each row group once through a mix).
TEST(MixedDatasetTest, TheLoadersPlanReachesEachSourceSplit) {
  auto a = std::make_shared<PlannedRows>(0, 6);
  auto b = std::make_shared<PlannedRows>(1, 6);
  MixOptions mix;
  mix.weights = {2, 1};
  mix.shuffle = {false, true};
  mix.seed = 9;
  const MixedDataset data({a, b}, mix);
  ASSERT_EQ(data.size(), 9);
  const std::vector<int64_t> order = {8, 0, 3, 5, 1, -1, 2, 7, 4, 6, 42};
  data.EpochOrder(order);
  std::vector<int64_t> want_a, want_b;
  for (int64_t i : order) {
    if (i < 0 || i >= data.size()) continue;
    (data.source_of(i) == 0 ? want_a : want_b).push_back(data.row_of(i));
  }
  ASSERT_EQ(a->orders.size(), 1u);
  ASSERT_EQ(b->orders.size(), 1u);
  EXPECT_EQ(a->orders[0], want_a);
  EXPECT_EQ(b->orders[0], want_b);
  EXPECT_EQ(want_a.size() + want_b.size(), 9u);

  // Delivered prefixes of the order: each source's count of rows in it.
  auto count_in = [&](int64_t prefix, int source) {
    int64_t c = 0;
    for (int64_t p = 0; p < prefix; ++p) {
      const int64_t i = order[static_cast<size_t>(p)];
      if (i >= 0 && i < data.size() && data.source_of(i) == source) ++c;
    }
    return c;
  };
  for (int64_t delivered : {3, 7, 11, 2}) {  // the last goes back: counted again
    data.EpochProgress(delivered);
    EXPECT_EQ(a->progress.back(), count_in(delivered, 0)) << delivered;
    EXPECT_EQ(b->progress.back(), count_in(delivered, 1)) << delivered;
  }
  data.EpochProgress(500);  // past the order: all of it
  EXPECT_EQ(a->progress.back(), static_cast<int64_t>(want_a.size()));

  // An abandoned epoch: every source is told the empty order.
  data.EpochOrder({});
  EXPECT_TRUE(a->orders.back().empty());
  EXPECT_TRUE(b->orders.back().empty());
}

TEST(MixedDatasetTest, ASourceGivenTwiceGetsOneOrderOfAllItsPositions) {
  auto a = std::make_shared<PlannedRows>(0, 4);
  MixOptions mix;
  mix.weights = {1, 1};
  const MixedDataset data({a, a}, mix);
  ASSERT_EQ(data.size(), 8);
  const std::vector<int64_t> order = {0, 1, 2, 3, 4, 5, 6, 7};
  data.EpochOrder(order);
  ASSERT_EQ(a->orders.size(), 1u);
  std::vector<int64_t> want;
  for (int64_t i : order) want.push_back(data.row_of(i));
  EXPECT_EQ(a->orders[0], want);
  data.EpochProgress(5);
  ASSERT_EQ(a->progress.size(), 1u);
  EXPECT_EQ(a->progress[0], 5);
}

}  // namespace
}  // namespace feedline::text
