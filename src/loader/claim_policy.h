// ClaimPolicy: how many rows a claim takes, and whether batches belong to
// workers. Pure functions of the options and of the measured cost per row;
// the state they read (a worker's moving average, the last cost any worker
// measured) is kept by the caller (the worker and consumer loops, RowClaims).
//
// A chunk should take about kChunkTargetNs: long enough that claiming it
// under the scheduler's lock is negligible, short enough to balance the load.
// Rows that each cost a round trip (worker processes that load rows one at a
// time) are claimed several at once. A batch that loads in under
// kCheapBatchNs is cheaper to load than a worker's wake-up and context
// switch: its released slots are handed out a few at a time
// (WorkerWakeups::set_batch_release_wakes).
#ifndef FEEDLINE_SRC_LOADER_CLAIM_POLICY_H_
#define FEEDLINE_SRC_LOADER_CLAIM_POLICY_H_

#include <cstdint>

#include "feedline/loader_options.h"

namespace feedline::internal::claim_policy {

constexpr double kChunkTargetNs = 20000.0;
constexpr int64_t kMaxChunk = 4096;
// With num_workers = 0 and a deadline (TryNext), the caller's thread loads
// chunks of about this long, so it returns to its caller (the Python binding,
// which checks for Ctrl-C) within the deadline plus one chunk.
constexpr double kCallerChunkTargetNs = 1e6;
// With num_workers = 0 and no deadline, the caller loads a batch whole.
constexpr int64_t kCallerWholeBatch = kMaxChunk * 1024;
// The consumer loads rows itself while it waits only when a row costs at most
// this (the consumer then returns to its batch within one chunk).
constexpr double kLendMaxNsPerRow = 1000.0;
constexpr double kCheapBatchNs = 50000.0;
// Claims of rows that each cost a round trip: about this much loading per
// claim, and no more rows than kMaxRoundTripRows, so that the last claims of
// a batch stay short. A row's measured cost includes waiting for a core: a
// Python row of ~50 us of work measured 100-1000 us with 2 worker processes
// and the training process on 2 cores, so a target of 250 us claimed one
// row at a time, a request and a wake-up per row; at 2 ms such rows go 8 at
// a time, and the pure-Python tokenizing bench loads 4% faster (9 of 9
// alternating rounds, 2026-12-02). Rows over 2 ms still go one by one.
constexpr double kRoundTripClaimNs = 2000000.0;
constexpr int64_t kMaxRoundTripRows = 8;

// LoaderOptions::batch_per_worker in effect: with workers and a plan
// (`map_style`), worker w binds and loads batches w, w + n, ... whole.
bool BatchPerWorker(const LoaderOptions& options, bool map_style);

// Rows per claim for about `target_ns` of loading at `ns_per_row` (1 before
// any cost is known), 1 .. kMaxChunk.
int64_t ChunkFor(double ns_per_row, double target_ns);
// A worker's claim (kChunkTargetNs).
int64_t WorkerChunk(double ns_per_row);
// The caller's own claim with num_workers = 0: in slices of
// kCallerChunkTargetNs with a deadline, else a whole batch.
int64_t CallerChunk(double ns_per_row, bool has_deadline);
// At least this many rows per claim when each row costs a round trip
// (kRoundTripClaimNs, at most kMaxRoundTripRows).
int64_t RoundTripChunk(double ns_per_row);

// A batch of `rows` at `ns_per_row` loads faster than a worker wakes up.
bool CheapBatch(double ns_per_row, int64_t rows);
// A consumer that would wait loads rows itself (as a lent worker) only
// when their cost is known and at most kLendMaxNsPerRow.
bool ConsumerLoadsWhileWaiting(double ns_per_row);

// The moving average of a cost per row, after `rows` rows took
// `elapsed_ns`: the first measure as it is, then 0.7 old + 0.3 new.
double UpdatedAverage(double ns_per_row, int64_t elapsed_ns, int64_t rows);

}  // namespace feedline::internal::claim_policy

#endif  // FEEDLINE_SRC_LOADER_CLAIM_POLICY_H_
