// PlanAutoTuning / ResolveAutoStatically: which options are tuned, the
// limits handed to the tuner, and the errors for bad values.
#include "src/loader/tuner_setup.h"

#include <gtest/gtest.h>

#include "feedline/error.h"

namespace feedline::internal {
namespace {

TunerResources Host(int max_workers, int64_t budget) {
  TunerResources r;
  r.cores = max_workers;
  r.max_workers = max_workers;
  r.memory_budget_bytes = budget;
  r.available_bytes = 4 * budget;
  return r;
}

TEST(TunerSetup, NothingAutoMeansNoTuner) {
  LoaderOptions o;
  o.num_workers = 3;
  EXPECT_FALSE(PlanAutoTuning(o, Host(8, 1 << 30), false).has_value());
  // prefetch "auto" without workers has nothing to tune.
  o.num_workers = 0;
  o.prefetch_factor = kAuto;
  EXPECT_FALSE(PlanAutoTuning(o, Host(8, 1 << 30), false).has_value());
}

TEST(TunerSetup, AutoWorkersStartEveryThreadTheTunerMayUse) {
  LoaderOptions o;
  o.num_workers = kAuto;
  o.prefetch_factor = 3;
  const auto plan = PlanAutoTuning(o, Host(6, 1 << 30), /*costly_workers=*/true);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->threads, 6);
  EXPECT_TRUE(plan->config.tune_workers);
  EXPECT_FALSE(plan->config.tune_slots);
  EXPECT_EQ(plan->config.prefetch_factor, 3);
  EXPECT_EQ(plan->config.max_workers, 6);
  EXPECT_TRUE(plan->config.costly_workers);
  EXPECT_EQ(plan->config.memory_budget_bytes, 1 << 30);
}

TEST(TunerSetup, AutoPrefetchWithFixedWorkersAndAnExplicitBudget) {
  LoaderOptions o;
  o.num_workers = 2;
  o.prefetch_factor = kAuto;
  o.memory_budget_bytes = 123456789;
  const auto plan = PlanAutoTuning(o, Host(8, 1 << 30), false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->threads, 2);
  EXPECT_FALSE(plan->config.tune_workers);
  EXPECT_TRUE(plan->config.tune_slots);
  EXPECT_EQ(plan->config.workers, 2);
  EXPECT_EQ(plan->config.memory_budget_bytes, 123456789);
  EXPECT_EQ(Tuner(plan->config).workers(), 2);
}

TEST(TunerSetup, BadValuesNameTheOption) {
  LoaderOptions o;
  o.num_workers = -2;
  EXPECT_THROW(
      {
        try {
          PlanAutoTuning(o, Host(2, 0), false);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("num_workers must be >= 0, got -2 (or kAuto"),
                    std::string::npos);
          throw;
        }
      },
      Error);
  o.num_workers = kAuto;
  o.prefetch_factor = 0;
  EXPECT_THROW(PlanAutoTuning(o, Host(2, 0), false), Error);
  o.prefetch_factor = kAuto;
  o.memory_budget_bytes = -1;
  EXPECT_THROW(PlanAutoTuning(o, Host(2, 0), false), Error);
  EXPECT_THROW(ResolveAutoStatically(o, Host(2, 0)), Error);
}

TEST(TunerSetup, ResolvedOptionsStartEveryThreadAndLeaveNoAuto) {
  LoaderOptions o;
  o.num_workers = kAuto;
  o.prefetch_factor = kAuto;
  auto plan = PlanAutoTuning(o, Host(6, 1 << 30), false);
  LoaderOptions r = ResolvedOptions(o, plan);
  EXPECT_EQ(r.num_workers, 6);
  EXPECT_EQ(r.prefetch_factor, 1);
  o.prefetch_factor = 3;
  plan = PlanAutoTuning(o, Host(6, 1 << 30), false);
  EXPECT_EQ(ResolvedOptions(o, plan).prefetch_factor, 3);
  // prefetch "auto" with no workers: nothing to tune, a plain 2.
  o.num_workers = 0;
  o.prefetch_factor = kAuto;
  plan = PlanAutoTuning(o, Host(6, 1 << 30), false);
  EXPECT_FALSE(plan.has_value());
  r = ResolvedOptions(o, plan);
  EXPECT_EQ(r.num_workers, 0);
  EXPECT_EQ(r.prefetch_factor, 2);
}

TEST(TunerSetup, StaticResolutionUsesOneWorkerPerCoreShare) {
  LoaderOptions o;
  o.num_workers = kAuto;
  o.prefetch_factor = kAuto;
  const LoaderOptions r = ResolveAutoStatically(o, Host(5, 0));
  EXPECT_EQ(r.num_workers, 5);
  EXPECT_EQ(r.prefetch_factor, 2);
  o.num_workers = 3;
  o.prefetch_factor = 4;
  EXPECT_EQ(ResolveAutoStatically(o, Host(5, 0)).num_workers, 3);
  EXPECT_EQ(ResolveAutoStatically(o, Host(5, 0)).prefetch_factor, 4);
}

}  // namespace
}  // namespace feedline::internal
