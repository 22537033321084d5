// Randomized check of the engine against a simple sequential model: for many
// random configurations, what the loader delivers must equal what a plain
// loop over the batch plan would produce (LevelDB's ConcurrentTest idea).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/rng.h"
#include "loader/test_datasets.h"

namespace feedline {
namespace {

using testing::FaultyDataset;
using testing::Indices;

// The model: batches of the plan, bad indices removed (policy skip), empty
// batches dropped.
std::vector<std::vector<int64_t>> Model(const BatchSampler& batches, int64_t epoch,
                                        const std::set<int64_t>& bad) {
  std::vector<std::vector<int64_t>> out;
  EpochPlan plan = batches.Plan(epoch);
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    std::vector<int64_t> kept;
    for (int64_t i : plan.batch(b)) {
      if (!bad.count(i)) kept.push_back(i);
    }
    if (!kept.empty()) out.push_back(kept);
  }
  return out;
}

TEST(EngineModel, RandomConfigurationsMatchTheSequentialModel) {
  Rng rng(/*seed=*/2024, 0, 0);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng.UniformInt(120));
    const int64_t batch = 1 + static_cast<int64_t>(rng.UniformInt(17));
    const int workers = static_cast<int>(rng.UniformInt(5));
    const int prefetch = 1 + static_cast<int>(rng.UniformInt(3));
    const bool in_order = rng.Bernoulli(0.7);
    const bool persistent = rng.Bernoulli(0.5);
    const bool fixed = rng.Bernoulli(0.5);
    const bool drop_last = rng.Bernoulli(0.3);
    std::set<int64_t> bad;
    for (int64_t i = 0; i < n; ++i) {
      if (rng.Bernoulli(0.08)) bad.insert(i);
    }
    LoaderOptions o;
    o.batch_size = batch;
    o.num_workers = workers;
    o.prefetch_factor = prefetch;
    o.in_order = in_order;
    o.persistent_workers = persistent;
    o.shuffle = true;
    o.seed = static_cast<uint64_t>(trial);
    o.drop_last = drop_last;
    o.error_policy = ErrorPolicy::kSkip;
    auto sampler = FixedBatchSampler(std::make_shared<RandomSampler>(n, o.seed), batch, drop_last);
    DataLoader loader(std::make_shared<FaultyDataset>(n, bad, fixed), o);
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      // Sometimes abandon an epoch part-way first: it must not disturb the next.
      if (rng.Bernoulli(0.3)) {
        loader.set_epoch(epoch);
        loader.Next();
        loader.Reset();
      }
      loader.set_epoch(epoch);
      std::vector<std::vector<int64_t>> got;
      for (const Batch& b : loader) got.push_back(Indices(b));
      std::vector<std::vector<int64_t>> expected = Model(sampler, epoch, bad);
      if (!in_order) {
        std::sort(got.begin(), got.end());
        std::sort(expected.begin(), expected.end());
      }
      ASSERT_EQ(got, expected) << "trial " << trial << " n=" << n << " batch=" << batch
                               << " workers=" << workers << " prefetch=" << prefetch
                               << " in_order=" << in_order << " fixed=" << fixed;
    }
  }
}

TEST(EngineModel, HoldingBatchesWhileIteratingKeepsThemIntact) {
  LoaderOptions o;
  o.batch_size = 5;
  o.num_workers = 3;
  o.prefetch_factor = 2;  // 6 slots; hold up to 4 at a time
  DataLoader loader(std::make_shared<testing::IndexDataset>(200, true), o);
  std::vector<Batch> held;
  int64_t next = 0;
  while (std::optional<Batch> b = loader.Next()) {
    held.push_back(*b);
    if (held.size() > 4) held.erase(held.begin());
    // Every held batch still holds the indices it was delivered with.
    for (const Batch& h : held) {
      std::vector<int64_t> idx = Indices(h);
      for (size_t k = 0; k < idx.size(); ++k) {
        ASSERT_EQ(idx[k], h.index() * 5 + static_cast<int64_t>(k));
      }
    }
    ++next;
  }
  EXPECT_EQ(next, 40);
}

}  // namespace
}  // namespace feedline
