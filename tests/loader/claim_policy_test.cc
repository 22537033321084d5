// claim_policy (src/loader/claim_policy.h): the size of a claim and the
// batches that belong to workers, as functions of the options and the
// measured cost per row.
#include "src/loader/claim_policy.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "feedline/loader_options.h"

namespace feedline::internal {
namespace {

using claim_policy::kMaxChunk;

LoaderOptions BatchPerWorkerOptions(int num_workers, bool batch_per_worker) {
  LoaderOptions options;
  options.num_workers = num_workers;
  options.batch_per_worker = batch_per_worker;
  return options;
}

TEST(ClaimPolicy, BatchPerWorkerNeedsTheOptionWorkersAndAPlan) {
  EXPECT_TRUE(claim_policy::BatchPerWorker(BatchPerWorkerOptions(2, true), /*map_style=*/true));
  EXPECT_FALSE(claim_policy::BatchPerWorker(BatchPerWorkerOptions(2, false), true));
  // The caller's thread loads everything: there is no worker to own a batch.
  EXPECT_FALSE(claim_policy::BatchPerWorker(BatchPerWorkerOptions(0, true), true));
  // A stream's workers bind their own batches anyway.
  EXPECT_FALSE(claim_policy::BatchPerWorker(BatchPerWorkerOptions(2, true), false));
}

TEST(ClaimPolicy, AWorkersChunkTakesAbout20UsBetweenOneRowAndTheMost) {
  EXPECT_EQ(claim_policy::WorkerChunk(0), 1);  // nothing measured yet
  EXPECT_EQ(claim_policy::WorkerChunk(1000), 20);
  EXPECT_EQ(claim_policy::WorkerChunk(20000), 1);
  EXPECT_EQ(claim_policy::WorkerChunk(1e6), 1);  // a slow row: one at a time
  EXPECT_EQ(claim_policy::WorkerChunk(1), kMaxChunk);
  EXPECT_EQ(claim_policy::WorkerChunk(0.001), kMaxChunk);
}

TEST(ClaimPolicy, TheCallersChunkIsAboutAMillisecondWithADeadlineElseTheWholeBatch) {
  EXPECT_EQ(claim_policy::CallerChunk(1000, /*has_deadline=*/true), 1000);
  EXPECT_EQ(claim_policy::CallerChunk(0, true), 1);
  EXPECT_EQ(claim_policy::CallerChunk(2e6, true), 1);
  // Without a deadline no claim is cut short, whatever a row costs.
  EXPECT_EQ(claim_policy::CallerChunk(1000, false), claim_policy::kCallerWholeBatch);
  EXPECT_EQ(claim_policy::CallerChunk(0, false), claim_policy::kCallerWholeBatch);
  EXPECT_GT(claim_policy::kCallerWholeBatch, kMaxChunk);
}

TEST(ClaimPolicy, RoundTripClaimsHoldAbout2MsOfRowsBetweenOneAndEight) {
  EXPECT_EQ(claim_policy::RoundTripChunk(0), 1);
  EXPECT_EQ(claim_policy::RoundTripChunk(100), 8);
  EXPECT_EQ(claim_policy::RoundTripChunk(150000), 8);  // a Python row waiting for a core
  EXPECT_EQ(claim_policy::RoundTripChunk(500000), 4);
  EXPECT_EQ(claim_policy::RoundTripChunk(2e6), 1);
  EXPECT_EQ(claim_policy::RoundTripChunk(5e6), 1);  // an image decoded in Python
}

TEST(ClaimPolicy, ABatchIsCheapUnder50Us) {
  EXPECT_TRUE(claim_policy::CheapBatch(10, 4));
  EXPECT_TRUE(claim_policy::CheapBatch(100, 499));
  EXPECT_FALSE(claim_policy::CheapBatch(100, 500));
  EXPECT_FALSE(claim_policy::CheapBatch(100000, 4));
}

TEST(ClaimPolicy, TheConsumerLoadsWhileWaitingOnlyRowsKnownToCostAMicrosecondAtMost) {
  EXPECT_FALSE(claim_policy::ConsumerLoadsWhileWaiting(0));  // not measured yet
  EXPECT_TRUE(claim_policy::ConsumerLoadsWhileWaiting(1));
  EXPECT_TRUE(claim_policy::ConsumerLoadsWhileWaiting(1000));
  EXPECT_FALSE(claim_policy::ConsumerLoadsWhileWaiting(1001));
}

TEST(ClaimPolicy, TheAverageStartsAtTheFirstMeasureThenMovesAThirdOfTheWay) {
  double ns = 0;
  ns = claim_policy::UpdatedAverage(ns, /*elapsed_ns=*/4000, /*rows=*/4);
  EXPECT_DOUBLE_EQ(ns, 1000);
  ns = claim_policy::UpdatedAverage(ns, 2000, 1);
  EXPECT_DOUBLE_EQ(ns, 0.7 * 1000 + 0.3 * 2000);
  // No rows: nothing was measured.
  EXPECT_DOUBLE_EQ(claim_policy::UpdatedAverage(ns, 5000, 0), ns);
}

}  // namespace
}  // namespace feedline::internal
