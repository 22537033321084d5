#include "feedline/hard_example_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "testing/chi_square.h"
#include "testing/errors.h"

namespace feedline {
namespace {

using test::ErrorOf;

std::vector<int64_t> Counts(const std::vector<int64_t>& draws, int64_t n) {
  std::vector<int64_t> counts(static_cast<size_t>(n));
  for (int64_t i : draws) ++counts[static_cast<size_t>(i)];
  return counts;
}

TEST(HardExampleSamplerTest, UniformBeforeAnyUpdate) {
  HardExampleSampler sampler(10, /*seed=*/1, {.num_samples = 20000});
  const std::vector<double> p = sampler.Probabilities();
  for (double x : p) EXPECT_DOUBLE_EQ(x, 0.1);
  const std::vector<int64_t> counts = Counts(sampler.Indices(0), 10);
  EXPECT_LT(test::ChiSquare(counts), test::ChiSquareBound(9));
}

TEST(HardExampleSamplerTest, ProbabilitiesFollowTheDocumentedRule) {
  HardExampleSampler sampler(4, 1, {.decay = 0.5, .floor = 0.2});
  const std::vector<int64_t> idx = {0, 1, 2};
  const std::vector<double> loss = {1.0, 3.0, 0.0};
  sampler.Update(idx, loss);
  // Index 3 is unseen: it scores like the highest seen (3). Scores 1, 3, 0, 3.
  std::vector<double> p = sampler.Probabilities();
  EXPECT_DOUBLE_EQ(p[0], 0.2 / 4 + 0.8 * 1.0 / 7);
  EXPECT_DOUBLE_EQ(p[1], 0.2 / 4 + 0.8 * 3.0 / 7);
  EXPECT_DOUBLE_EQ(p[2], 0.2 / 4);  // the floor: a zero loss still gets drawn
  EXPECT_DOUBLE_EQ(p[3], 0.2 / 4 + 0.8 * 3.0 / 7);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
  // The moving average: 0.5 * 3 + 0.5 * 1 = 2 for index 1; index 3 now 5.
  const std::vector<int64_t> idx2 = {1, 3};
  const std::vector<double> loss2 = {1.0, 5.0};
  sampler.Update(idx2, loss2);
  p = sampler.Probabilities();
  EXPECT_DOUBLE_EQ(p[1], 0.2 / 4 + 0.8 * 2.0 / 8);
  EXPECT_DOUBLE_EQ(p[3], 0.2 / 4 + 0.8 * 5.0 / 8);
}

TEST(HardExampleSamplerTest, HighLossSamplesAreDrawnMoreAndFollowTheProbabilities) {
  const int64_t n = 20;
  HardExampleSampler sampler(n, 5, {.num_samples = 40000, .floor = 0.1});
  std::vector<int64_t> idx(n);
  std::vector<double> loss(n);
  for (int64_t i = 0; i < n; ++i) {
    idx[static_cast<size_t>(i)] = i;
    loss[static_cast<size_t>(i)] = i < 5 ? 4.0 : 0.25;  // 0..4 are hard
  }
  sampler.Update(idx, loss);
  const std::vector<double> p = sampler.Probabilities();
  const std::vector<int64_t> counts = Counts(sampler.Indices(0), n);
  EXPECT_LT(test::ChiSquare(counts, p), test::ChiSquareBound(static_cast<int>(n - 1)));
  int64_t hard = 0;
  for (int64_t i = 0; i < 5; ++i) hard += counts[static_cast<size_t>(i)];
  // The 5 hard samples: 0.1 * 5/20 + 0.9 * 20/23.75 = 78% of the draws (25% uniform).
  EXPECT_GT(static_cast<double>(hard) / 40000, 0.75);
  EXPECT_LT(static_cast<double>(hard) / 40000, 0.81);
}

TEST(HardExampleSamplerTest, TheFloorKeepsEverySampleDrawn) {
  const int64_t n = 50;
  HardExampleSampler sampler(n, 2, {.num_samples = 100000, .floor = 0.1});
  std::vector<int64_t> idx(n);
  std::vector<double> loss(n, 0.0);
  std::iota(idx.begin(), idx.end(), 0);
  loss[0] = 1e6;  // one sample far harder than all others, which have loss 0
  sampler.Update(idx, loss);
  const std::vector<double> p = sampler.Probabilities();
  for (int64_t i = 1; i < n; ++i) EXPECT_DOUBLE_EQ(p[static_cast<size_t>(i)], 0.1 / n);
  const std::vector<int64_t> counts = Counts(sampler.Indices(0), n);
  // Expected 200 draws each; none starves.
  for (int64_t i = 1; i < n; ++i) EXPECT_GT(counts[static_cast<size_t>(i)], 120) << i;
}

TEST(HardExampleSamplerTest, DeterministicForASeedAndASequenceOfUpdates) {
  auto run = [](uint64_t seed) {
    HardExampleSampler sampler(30, seed, {.num_samples = 64});
    std::vector<std::vector<int64_t>> epochs;
    for (int64_t e = 0; e < 4; ++e) {
      std::vector<int64_t> draws = sampler.Indices(e);
      std::vector<double> losses;
      for (int64_t i : draws) losses.push_back(static_cast<double>(i % 7));
      sampler.Update(draws, losses);
      epochs.push_back(std::move(draws));
    }
    return epochs;
  };
  EXPECT_EQ(run(9), run(9));
  EXPECT_NE(run(9), run(10));
}

TEST(HardExampleSamplerTest, AnEpochIsFixedWhenFirstPlanned) {
  HardExampleSampler sampler(10, 3, {.num_samples = 100});
  const std::vector<int64_t> first = sampler.Indices(0);
  std::vector<int64_t> idx(10);
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<double> loss(10, 1.0);
  loss[0] = 100.0;
  sampler.Update(idx, loss);
  EXPECT_EQ(sampler.Indices(0), first);  // updates shape the next epoch, not this one
  // Index 0 now has 0.1 / 10 + 0.9 * 100 / 109 = 84% of the draws.
  const std::vector<int64_t> next = Counts(sampler.Indices(1), 10);
  EXPECT_GT(next[0], 65);
  EXPECT_LT(Counts(first, 10)[0], 25);
}

TEST(HardExampleSamplerTest, StateRestoresTheSameEpochs) {
  HardExampleSampler a(25, 4, {.num_samples = 40});
  std::vector<int64_t> draws = a.Indices(0);
  std::vector<double> losses(draws.size(), 2.0);
  losses[0] = 9.0;
  a.Update(draws, losses);
  (void)a.Indices(1);  // epoch 1 planned, then more updates arrive
  const std::vector<int64_t> idx = {3, 4};
  const std::vector<double> loss = {7.0, 0.5};
  a.Update(idx, loss);

  HardExampleSampler b(25, 4, {.num_samples = 40});
  b.Restore(a.state());
  EXPECT_EQ(b.Indices(1), a.Indices(1));  // the planned epoch, as it was planned
  EXPECT_EQ(b.Indices(2), a.Indices(2));  // the next, from the updated scores
  EXPECT_EQ(b.Probabilities(), a.Probabilities());
}

TEST(HardExampleSamplerTest, UpdateErrorsNameTheArgument) {
  HardExampleSampler sampler(5, 1);
  const std::vector<int64_t> two = {0, 1};
  const std::vector<double> one = {1.0};
  EXPECT_EQ(ErrorOf([&] { sampler.Update(two, one); }),
            "HardExampleSampler.update: indices and losses must have the same length, got 2 "
            "indices and 1 losses");
  const std::vector<int64_t> bad_index = {0, 5};
  const std::vector<double> ok = {1.0, 1.0};
  EXPECT_THROW(sampler.Update(bad_index, ok), IndexError);
  EXPECT_EQ(ErrorOf([&] { sampler.Update(bad_index, ok); }),
            "HardExampleSampler.update: indices[1] is 5, outside [0, 5)");
  const std::vector<int64_t> negative = {-1};
  EXPECT_EQ(ErrorOf([&] { sampler.Update(negative, one); }),
            "HardExampleSampler.update: indices[0] is -1, outside [0, 5)");
  const std::vector<double> nan = {1.0, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_EQ(ErrorOf([&] { sampler.Update(two, nan); }),
            "HardExampleSampler.update: losses[1] must be finite and >= 0, got nan");
  const std::vector<double> below = {-0.5, 1.0};
  EXPECT_EQ(ErrorOf([&] { sampler.Update(two, below); }),
            "HardExampleSampler.update: losses[0] must be finite and >= 0, got -0.5");
  // A refused update applies nothing, not even its valid entries.
  for (double p : sampler.Probabilities()) EXPECT_DOUBLE_EQ(p, 0.2);
}

TEST(HardExampleSamplerTest, OptionErrorsNameTheOption) {
  EXPECT_EQ(ErrorOf([] { HardExampleSampler(0, 1); }),
            "HardExampleSampler: n must be >= 1, got 0");
  EXPECT_EQ(ErrorOf([] { HardExampleSampler(3, 1, {.num_samples = 0}); }),
            "HardExampleSampler: num_samples must be >= 1, got 0");
  EXPECT_EQ(ErrorOf([] { HardExampleSampler(3, 1, {.decay = 1.0}); }),
            "HardExampleSampler: decay must be in [0, 1), got 1");
  EXPECT_EQ(ErrorOf([] { HardExampleSampler(3, 1, {.floor = 0.0}); }),
            "HardExampleSampler: floor must be in (0, 1] (0 would let samples starve), got 0");
  EXPECT_EQ(ErrorOf([] { HardExampleSampler(3, 1).Indices(-1); }),
            ErrorOf([] { RandomSampler(3, 1).Indices(-1); }));
}

TEST(HardExampleSamplerTest, RestoreRefusesAStateThatDoesNotFit) {
  HardExampleSampler sampler(3, 1);
  HardExampleSampler::State state = sampler.state();
  state.scores.push_back(1.0);
  EXPECT_EQ(ErrorOf([&] { sampler.Restore(state); }),
            "HardExampleSampler.restore: scores has 4 entries, this sampler has 3 samples");
  state = sampler.state();
  state.scores[1] = -1.0;
  EXPECT_EQ(ErrorOf([&] { sampler.Restore(state); }),
            "HardExampleSampler.restore: scores[1] must be finite and >= 0, got -1");
  state = sampler.state();
  state.planned_epoch = 2;  // planned, but no probabilities
  EXPECT_EQ(ErrorOf([&] { sampler.Restore(state); }),
            "HardExampleSampler.restore: planned has 0 entries, this sampler has 3 samples");
}

// Updates from the training thread while the loader's thread plans epochs:
// no torn reads (run under ThreadSanitizer with the data label).
TEST(HardExampleSamplerTest, UpdatesWhileTheLoaderReads) {
  HardExampleSampler sampler(100, 7, {.num_samples = 200});
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    for (int64_t e = 0; !stop.load(); ++e) {
      for (int64_t i : sampler.Indices(e)) ASSERT_TRUE(i >= 0 && i < 100);
      (void)sampler.state();
    }
  });
  std::vector<int64_t> idx(10);
  std::vector<double> loss(10);
  for (int round = 0; round < 500; ++round) {
    for (int k = 0; k < 10; ++k) {
      idx[static_cast<size_t>(k)] = (round * 10 + k) % 100;
      loss[static_cast<size_t>(k)] = (round + k) % 5;
    }
    sampler.Update(idx, loss);
  }
  stop = true;
  reader.join();
  const std::vector<double> p = sampler.Probabilities();
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-9);
}

}  // namespace
}  // namespace feedline
