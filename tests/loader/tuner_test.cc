// The tuner's decisions on scripted workloads, driven by a fake clock: a
// small simulation of the loader (workers producing batches in order into a
// bounded number of slots) and a training loop (a step per batch) feeds the
// tuner the counters the engine would, and applies its setting. No timing is
// measured: every number here is simulated time.
#include "src/loader/tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>


namespace feedline::internal {
namespace {

constexpr int64_t kTunerMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;

// What a scripted run measured, per simulated second.
struct Second {
  int64_t batches = 0;
  int64_t wait_ns = 0;
  int workers = 0;  // at the end of the second
  int slots = 0;
};

struct Workload {
  // Batches per second `workers` workers deliver for batch b (contention is
  // in the curve); busy time is workers x the time they take.
  std::function<double(int workers, int64_t batch)> rate;
  // The training step after batch b, at simulated time t.
  std::function<double(int64_t batch, int64_t t_ns)> step_ns;
  int64_t slot_bytes = 0;
  int64_t epoch_batches = 0;  // > 0: epochs of this many batches
};

// A time-stepped simulation: one batch in production at a time (the
// engine's workers share the open batch), finished batches wait in slots,
// the loop holds the batch it trains on.
class Simulation {
 public:
  Simulation(const TunerConfig& config, Workload workload)
      : tuner_(config), workload_(std::move(workload)) {}

  void Run(int64_t duration_ns) {
    const int64_t dt = 50'000;  // 50 us
    for (; now_ < duration_ns; now_ += dt) {
      // The loop: trains, then asks for the next batch.
      if (stepping_) {
        step_left_ -= dt;
        if (step_left_ <= 0) {
          stepping_ = false;
          held_ = false;  // the step is done with its batch
        }
      }
      if (!stepping_) {
        if (ready_ > 0) {
          --ready_;
          held_ = true;
          ++delivered_;
          stepping_ = true;
          step_left_ = static_cast<int64_t>(workload_.step_ns(delivered_ - 1, now_));
          Observe();
        } else {
          wait_ns_ += dt;
          per_second_[Index()].wait_ns += dt;
        }
      }
      // The loader: a batch starts when a slot is free.
      const int workers = tuner_.workers();
      // The first batch of an epoch is loaded only once the loop asks for it.
      const bool epoch_start = workload_.epoch_batches > 0 && produced_ > 0 &&
                               produced_ % workload_.epoch_batches == 0;
      const bool may_start = !epoch_start || (delivered_ == produced_ && !stepping_);
      if (!producing_ && may_start && int{held_} + ready_ < tuner_.slots()) {
        producing_ = true;
        left_ = 1.0;
      }
      if (producing_) {
        left_ -= workload_.rate(workers, produced_) * static_cast<double>(dt) / kSec;
        busy_ns_ += int64_t{workers} * dt;
        if (left_ <= 0) {
          producing_ = false;
          ++produced_;
          ++ready_;
        }
      }
      Second& s = per_second_[Index()];
      s.workers = tuner_.workers();
      s.slots = tuner_.slots();
    }
  }

  const Tuner& tuner() const { return tuner_; }
  const std::vector<Second>& seconds() const { return per_second_storage_; }
  int max_workers_seen() const { return max_workers_seen_; }
  // When the loop received batch `b` (0-based), in simulated seconds.
  double DeliveredAtS(int64_t b) const {
    return static_cast<double>(delivered_at_.at(static_cast<size_t>(b))) / kSec;
  }
  int max_slots_seen() const { return max_slots_seen_; }

  // Batches per second and wait share over [from, to) seconds.
  double Rate(int from, int to) const {
    int64_t b = 0;
    for (int s = from; s < to; ++s) b += per_second_storage_.at(static_cast<size_t>(s)).batches;
    return static_cast<double>(b) / (to - from);
  }
  double WaitShare(int from, int to) const {
    int64_t w = 0;
    for (int s = from; s < to; ++s) w += per_second_storage_.at(static_cast<size_t>(s)).wait_ns;
    return static_cast<double>(w) / (static_cast<double>(to - from) * kSec);
  }

 private:
  struct PerSecond {
    std::vector<Second>* storage;
    Second& operator[](size_t i) {
      if (storage->size() <= i) storage->resize(i + 1);
      return (*storage)[i];
    }
  };
  size_t Index() const { return static_cast<size_t>(now_ / kSec); }

  void Observe() {
    per_second_[Index()].batches += 1;
    delivered_at_.push_back(now_);
    TunerObservation o;
    o.now_ns = now_;
    o.batches = delivered_;
    o.samples = delivered_ * 64;
    o.wait_ns = wait_ns_;
    o.busy_ns = busy_ns_;
    o.slot_bytes = workload_.slot_bytes;
    if (workload_.epoch_batches > 0) o.epoch = (delivered_ - 1) / workload_.epoch_batches;
    tuner_.Observe(o);
    max_workers_seen_ = std::max(max_workers_seen_, tuner_.workers());
    max_slots_seen_ = std::max(max_slots_seen_, tuner_.slots());
  }

  Tuner tuner_;
  Workload workload_;
  int64_t now_ = 0;
  bool stepping_ = false, held_ = false, producing_ = false;
  int64_t step_left_ = 0;
  int ready_ = 0;
  double left_ = 0;
  int64_t delivered_ = 0, produced_ = 0;
  int64_t wait_ns_ = 0, busy_ns_ = 0;
  int max_workers_seen_ = 0, max_slots_seen_ = 0;
  std::vector<Second> per_second_storage_;
  std::vector<int64_t> delivered_at_;
  PerSecond per_second_{&per_second_storage_};
};

// Each worker loads a batch in `cost_ms` (no contention).
std::function<double(int, int64_t)> Linear(double cost_ms) {
  return [cost_ms](int workers, int64_t) { return workers * 1000.0 / cost_ms; };
}
std::function<double(int64_t, int64_t)> Step(double ms) {
  return [ms](int64_t, int64_t) { return ms * kTunerMs; };
}

std::string Log(const Tuner& tuner) {
  std::string out;
  for (const TunerDecision& d : tuner.Snapshot().log) {
    out += std::to_string(d.at_s) + "s w" + std::to_string(d.workers) + " s" +
           std::to_string(d.slots) + ": " + d.reason + "\n";
  }
  return out;
}

TEST(Tuner, LoaderBoundAddsWorkersUpToTheCores) {
  TunerConfig config;
  config.max_workers = 8;
  // No step: the loop only waits. 40 ms per batch per worker.
  Simulation sim(config, {Linear(40), Step(0)});
  sim.Run(20 * kSec);
  EXPECT_EQ(sim.tuner().workers(), 8) << Log(sim.tuner());
  // The best fixed setting (8 workers) gives 200 batches/s; auto reaches
  // 0.95 of it well before the end.
  EXPECT_GE(sim.Rate(4, 20), 0.95 * 200) << Log(sim.tuner());
}

TEST(Tuner, StopsAddingWhenThroughputStopsRising) {
  // The article's table: 4 workers 320 images/s, 8 workers 580, 16 workers
  // 510 (batches of 64), on a machine with 32 cores.
  auto images_per_s = [](int w) {
    const double xs[] = {1, 4, 8, 16, 32};
    const double ys[] = {90, 320, 580, 510, 400};
    for (int i = 0; i < 4; ++i) {
      if (w <= xs[i + 1]) return ys[i] + (ys[i + 1] - ys[i]) * (w - xs[i]) / (xs[i + 1] - xs[i]);
    }
    return ys[4];
  };
  TunerConfig config;
  config.max_workers = 32;
  Simulation sim(config,
                 {[&](int w, int64_t) { return images_per_s(w) / 64.0; }, Step(0)});
  sim.Run(30 * kSec);
  EXPECT_EQ(sim.tuner().workers(), 8) << Log(sim.tuner());
  EXPECT_LE(sim.max_workers_seen(), 10) << Log(sim.tuner());
  EXPECT_NE(Log(sim.tuner()).find("did not rise"), std::string::npos) << Log(sim.tuner());
}

TEST(Tuner, StepBoundUsesFewerWorkersAndSlotsWithoutWaiting) {
  TunerConfig config;
  config.max_workers = 2;
  // One worker loads a batch in 32 ms; the step takes 80 ms.
  Simulation sim(config, {Linear(32), Step(80)});
  sim.Run(20 * kSec);
  EXPECT_EQ(sim.tuner().workers(), 1) << Log(sim.tuner());
  EXPECT_EQ(sim.tuner().slots(), Tuner::kMinSlots) << Log(sim.tuner());
  EXPECT_LE(sim.max_slots_seen(), 3) << Log(sim.tuner());
  EXPECT_LE(sim.WaitShare(0, 20), 0.01) << Log(sim.tuner());
}

TEST(Tuner, AnEpochStartsWaitDoesNotGrowThePrefetch) {
  TunerConfig config;
  config.max_workers = 2;
  // Epochs of 60 batches (5 s): the first batch of each is loaded only when
  // the loop asks for it, a 32 ms wait no slot can remove.
  Workload epochs{Linear(32), Step(80)};
  epochs.epoch_batches = 60;
  Simulation sim(config, epochs);
  sim.Run(40 * kSec);
  EXPECT_EQ(sim.tuner().workers(), 1) << Log(sim.tuner());
  EXPECT_EQ(sim.max_slots_seen(), Tuner::kMinSlots) << Log(sim.tuner());
  EXPECT_LE(sim.WaitShare(5, 40), 0.01) << Log(sim.tuner());
}

TEST(Tuner, FollowsAStepTimeThatChangesHalfway) {
  TunerConfig config;
  config.max_workers = 2;
  Simulation sim(config, {Linear(32), [](int64_t, int64_t t) {
                            return (t < 20 * kSec ? 80.0 : 20.0) * kTunerMs;
                          }});
  sim.Run(40 * kSec);
  EXPECT_EQ(sim.seconds().at(19).workers, 1) << Log(sim.tuner());
  // Within a few seconds of the change it runs two workers again...
  EXPECT_EQ(sim.seconds().at(23).workers, 2) << Log(sim.tuner());
  // ...and the loop waits at most 5% from then on.
  EXPECT_LE(sim.WaitShare(23, 40), 0.05) << Log(sim.tuner());
  EXPECT_GE(sim.Rate(23, 40), 0.9 * 50) << Log(sim.tuner());
}

TEST(Tuner, JitterGrowsThePrefetchDepth) {
  TunerConfig config;
  config.max_workers = 2;
  // Every 10th batch takes 12x as long; on average two workers deliver a
  // batch per ~10.5 ms, faster than the 16 ms step.
  Workload jitter{[](int w, int64_t b) { return w * 1000.0 / (b % 10 == 9 ? 120.0 : 10.0); },
                  Step(16)};
  Simulation sim(config, jitter);
  sim.Run(30 * kSec);
  EXPECT_GT(sim.tuner().slots(), Tuner::kMinSlots) << Log(sim.tuner());
  EXPECT_NE(Log(sim.tuner()).find("jitter"), std::string::npos) << Log(sim.tuner());
  EXPECT_LE(sim.WaitShare(20, 30), 0.05) << Log(sim.tuner());
}

TEST(Tuner, ASlowAverageAddsWorkersNotPrefetch) {
  TunerConfig config;
  config.max_workers = 2;
  // Two workers deliver a batch per 20 ms, the step takes 15 ms: no depth
  // of prefetch helps, and the cores are all in use.
  Simulation sim(config, {Linear(40), Step(15)});
  sim.Run(20 * kSec);
  EXPECT_EQ(sim.tuner().workers(), 2) << Log(sim.tuner());
  EXPECT_EQ(sim.tuner().slots(), Tuner::kMinSlots) << Log(sim.tuner());
  EXPECT_EQ(Log(sim.tuner()).find("jitter"), std::string::npos) << Log(sim.tuner());
}

Workload JitterWithSlotsOf(int64_t slot_bytes) {
  return {[](int w, int64_t b) { return w * 1000.0 / (b % 10 == 9 ? 120.0 : 10.0); }, Step(16),
          slot_bytes};
}

// A batch's cost varies from batch to batch (image sizes, crops): a factor
// from 0.6 to 1.4, mean 1, drawn from the batch's index.
double Jitter(int64_t batch) {
  uint64_t x = static_cast<uint64_t>(batch) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return 0.6 + 0.8 * static_cast<double>(x % 1000) / 999.0;
}

// The bench's step change on two cores: after 80 ms the step drops to 20
// ms, and the two workers deliver a batch per 19.4 ms on average, each
// batch 0.6x to 1.4x of that. With 2 slots the loop waits for every batch
// slower than the step; a deeper prefetch fills only at the 0.6 ms per batch
// by which the loader is faster, too slowly to show in the next window.
TEST(Tuner, FollowsAStepDropToNearTheLoadersCapacity) {
  TunerConfig config;
  config.max_workers = 2;
  // As in the bench: epochs of 62 batches, the change at the start of the
  // fifth epoch (batch 248, about 20 s in).
  Workload near{[](int w, int64_t b) { return w * 1000.0 / (38.8 * Jitter(b)); },
                [](int64_t b, int64_t) { return (b < 248 ? 80.0 : 20.0) * kTunerMs; },
                38'535'168, 62};  // slots of 64 images of 224 x 224 x 3 floats
  Simulation sim(config, near);
  sim.Run(40 * kSec);
  EXPECT_EQ(sim.seconds().at(19).workers, 1) << Log(sim.tuner());
  EXPECT_EQ(sim.seconds().at(19).slots, Tuner::kMinSlots) << Log(sim.tuner());
  // From 2 s after the change the loop waits at most 5%, epoch starts
  // included.
  EXPECT_LE(sim.WaitShare(23, 40), 0.05) << Log(sim.tuner());
  // Add fast: the second worker comes within 150 ms of the change (the
  // loop then waits for most of each batch, seen in a quarter window).
  const TunerStats stats = sim.tuner().Snapshot();
  auto first_after = std::find_if(stats.log.begin(), stats.log.end(),
                                  [](const TunerDecision& d) { return d.batch > 248; });
  ASSERT_NE(first_after, stats.log.end()) << Log(sim.tuner());
  EXPECT_EQ(first_after->workers, 2) << Log(sim.tuner());
  // Decision times count from the first observation (batch 0's delivery).
  EXPECT_LE(first_after->at_s + sim.DeliveredAtS(0) - sim.DeliveredAtS(248), 0.15)
      << Log(sim.tuner());
}

// Remove slowly: 1.5 s of a slower step (an evaluation, a logging pause)
// between stretches of a fast one is not a reason to give workers back,
// which the next fast stretch would have to wait for.
TEST(Tuner, ShortCalmSpellsGiveNothingBack) {
  TunerConfig config;
  config.max_workers = 2;
  auto step = [](int64_t, int64_t t) { return ((t % (4500 * kTunerMs)) < 3 * kSec ? 20.0 : 80.0) * kTunerMs; };
  Simulation sim(config, {Linear(32), step});
  sim.Run(45 * kSec);
  EXPECT_EQ(sim.tuner().workers(), 2) << Log(sim.tuner());
  EXPECT_LE(sim.WaitShare(5, 45), 0.02) << Log(sim.tuner());
}

// Trivial samples (the engine alone, batch 256 of a few bytes): the loop,
// or the hand-off of each batch, is the bottleneck, and every slot fewer
// than the fixed default (workers x prefetch 2) costs throughput while it
// saves a few KiB. With slots this cheap the tuner never goes below it.
TEST(Tuner, CheapSlotsNeverGoBelowTheFixedDefault) {
  TunerConfig config;
  config.max_workers = 2;
  config.tune_workers = false;
  config.workers = 2;
  // The loader is far ahead of a 1 ms step: a calm run.
  Workload cheap{Linear(0.5), Step(1), 2048};
  Simulation sim(config, cheap);
  sim.Run(20 * kSec);
  EXPECT_EQ(sim.tuner().slots(), 4) << Log(sim.tuner());
  for (size_t s = 1; s < sim.seconds().size(); ++s) {
    EXPECT_GE(sim.seconds()[s].slots, 4) << "second " << s << "\n" << Log(sim.tuner());
  }
  // The same run with slots of 38.5 MB gives the memory back: 2 slots.
  Workload large = cheap;
  large.slot_bytes = 38'535'168;
  Simulation big(config, large);
  big.Run(20 * kSec);
  EXPECT_EQ(big.tuner().slots(), Tuner::kMinSlots) << Log(big.tuner());
}

TEST(Tuner, CheapSlotsGrowPastTheDefaultOnJitter) {
  TunerConfig config;
  config.max_workers = 2;
  Workload jitter = JitterWithSlotsOf(2048);
  Simulation sim(config, jitter);
  sim.Run(30 * kSec);
  EXPECT_GT(sim.max_slots_seen(), 4) << Log(sim.tuner());
  EXPECT_GE(sim.tuner().slots(), 4) << Log(sim.tuner());
  EXPECT_LE(sim.WaitShare(20, 30), 0.05) << Log(sim.tuner());
}

TEST(Tuner, MemoryBudgetCapsTheSlots) {
  TunerConfig config;
  config.max_workers = 2;
  config.memory_budget_bytes = 450 << 20;  // 4 slots of 100 MiB
  Simulation sim(config, JitterWithSlotsOf(100 << 20));
  sim.Run(30 * kSec);
  EXPECT_EQ(sim.tuner().slot_cap(), 4);
  EXPECT_LE(sim.max_slots_seen(), 4) << Log(sim.tuner());
  EXPECT_GT(sim.max_slots_seen(), Tuner::kMinSlots) << Log(sim.tuner());
}

TEST(Tuner, ABudgetBelowTwoSlotsKeepsTwoAndSaysSo) {
  TunerConfig config;
  config.max_workers = 2;
  config.memory_budget_bytes = 150 << 20;  // 1.5 slots
  Simulation sim(config, JitterWithSlotsOf(100 << 20));
  sim.Run(10 * kSec);
  EXPECT_EQ(sim.max_slots_seen(), Tuner::kMinSlots) << Log(sim.tuner());
  EXPECT_NE(Log(sim.tuner()).find("fewer than 2 slots"), std::string::npos) << Log(sim.tuner());
}

TEST(Tuner, ABudgetLearnedLateShrinksFixedPrefetch) {
  // Auto workers with a fixed prefetch_factor: slots follow workers x 4,
  // within the budget once the slot size is known.
  TunerConfig config;
  config.max_workers = 8;
  config.tune_slots = false;
  config.prefetch_factor = 4;
  config.memory_budget_bytes = 1000 << 20;
  Tuner tuner(config);
  EXPECT_EQ(tuner.slots(), 16);
  tuner.Observe({0, 0, 0, 0, 0, 0});
  tuner.Observe({1 * kTunerMs, 1, 64, 0, 0, 100 << 20});
  EXPECT_EQ(tuner.slots(), 10);
  EXPECT_NE(Log(tuner).find("memory budget"), std::string::npos) << Log(tuner);
}

TEST(Tuner, FixedWorkersStayFixed) {
  TunerConfig config;
  config.max_workers = 8;
  config.tune_workers = false;
  config.workers = 3;
  Simulation sim(config, {Linear(40), Step(0)});
  sim.Run(10 * kSec);
  EXPECT_EQ(sim.max_workers_seen(), 3);
  EXPECT_EQ(sim.tuner().workers(), 3);
}

TEST(Tuner, WorkerProcessesChangeRarely) {
  TunerConfig config;
  config.max_workers = 8;
  config.costly_workers = true;
  Simulation sim(config, {Linear(40), Step(0)});
  sim.Run(60 * kSec);
  const TunerStats stats = sim.tuner().Snapshot();
  // Three windows of 0.8 s must agree before a change: none in the first 2.4 s.
  ASSERT_FALSE(stats.log.empty());
  EXPECT_GE(stats.log.front().at_s, 2.4) << Log(sim.tuner());
  EXPECT_EQ(sim.tuner().workers(), 8) << Log(sim.tuner());
  EXPECT_LE(stats.decisions, 6) << Log(sim.tuner());
  // Threads on the same workload decide sooner.
  TunerConfig threads = config;
  threads.costly_workers = false;
  Simulation fast(threads, {Linear(40), Step(0)});
  fast.Run(60 * kSec);
  EXPECT_LT(fast.tuner().Snapshot().log.front().at_s, 1.0) << Log(fast.tuner());
}

TEST(Tuner, SameMeasurementsGiveTheSameDecisions) {
  TunerConfig config;
  config.max_workers = 4;
  auto run = [&] {
    Simulation sim(config, {Linear(32), [](int64_t b, int64_t t) {
                              return (t < 10 * kSec ? 80.0 : 12.0) * kTunerMs + (b % 7) * kTunerMs;
                            }});
    sim.Run(20 * kSec);
    return Log(sim.tuner());
  };
  const std::string first = run();
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, run());
}

TEST(Tuner, NoDecisionBeforeAWindowIsComplete) {
  TunerConfig config;
  config.max_workers = 8;
  Tuner tuner(config);
  const int start = tuner.workers();
  // Waiting 20% of the time (not urgent), 5 batches in 150 ms: not a window
  // yet. (Busy workers: the loader is the bottleneck.)
  for (int i = 0; i <= 5; ++i) {
    tuner.Observe({i * 30 * kTunerMs, i, i * 64, i * 6 * kTunerMs, i * 30 * kTunerMs * start, 0});
  }
  EXPECT_EQ(tuner.workers(), start);
  EXPECT_EQ(tuner.Snapshot().decisions, 0);
  // Worker processes wait for a whole window even when the loop waits all
  // the time (a change costs a fork or a kill).
  TunerConfig processes = config;
  processes.costly_workers = true;
  Tuner slow(processes);
  for (int i = 0; i <= 5; ++i) {
    slow.Observe({i * 30 * kTunerMs, i, i * 64, i * 30 * kTunerMs, i * 30 * kTunerMs * start, 0});
  }
  EXPECT_EQ(slow.Snapshot().decisions, 0);
}

TEST(Tuner, ABigWaitIsJudgedInAQuarterOfAWindow) {
  TunerConfig config;
  config.max_workers = 8;
  Tuner tuner(config);
  const int start = tuner.workers();
  // The loop waits all the time and the workers are busy: after 2 batches
  // and 60 ms (a quarter of the 200 ms window is 50 ms) workers are added.
  for (int i = 0; i <= 2; ++i) {
    tuner.Observe({i * 30 * kTunerMs, i, i * 64, i * 30 * kTunerMs, i * 30 * kTunerMs * start, 0});
  }
  EXPECT_GT(tuner.workers(), start) << Log(tuner);
}

}  // namespace
}  // namespace feedline::internal
