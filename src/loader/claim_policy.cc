#include "src/loader/claim_policy.h"

#include <algorithm>

namespace feedline::internal::claim_policy {

bool BatchPerWorker(const LoaderOptions& options, bool map_style) {
  return options.batch_per_worker && options.num_workers > 0 && map_style;
}

int64_t ChunkFor(double ns_per_row, double target_ns) {
  if (ns_per_row <= 0) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(target_ns / ns_per_row), 1, kMaxChunk);
}

int64_t WorkerChunk(double ns_per_row) { return ChunkFor(ns_per_row, kChunkTargetNs); }

int64_t CallerChunk(double ns_per_row, bool has_deadline) {
  return has_deadline ? ChunkFor(ns_per_row, kCallerChunkTargetNs) : kCallerWholeBatch;
}

int64_t RoundTripChunk(double ns_per_row) {
  if (ns_per_row <= 0) return 1;
  return std::clamp<int64_t>(static_cast<int64_t>(kRoundTripClaimNs / ns_per_row), 1,
                             kMaxRoundTripRows);
}

bool CheapBatch(double ns_per_row, int64_t rows) {
  return ns_per_row * static_cast<double>(rows) < kCheapBatchNs;
}

bool ConsumerLoadsWhileWaiting(double ns_per_row) {
  return ns_per_row > 0 && ns_per_row <= kLendMaxNsPerRow;
}

double UpdatedAverage(double ns_per_row, int64_t elapsed_ns, int64_t rows) {
  if (rows <= 0) return ns_per_row;
  const double per_row = static_cast<double>(elapsed_ns) / static_cast<double>(rows);
  return ns_per_row <= 0 ? per_row : 0.7 * ns_per_row + 0.3 * per_row;
}

}  // namespace feedline::internal::claim_policy
