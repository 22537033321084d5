// StatsCollector: the loader's live counters (atomics, so workers add without
// a lock and stats() may snapshot from any thread).
#ifndef FEEDLINE_SRC_LOADER_STATS_COLLECTOR_H_
#define FEEDLINE_SRC_LOADER_STATS_COLLECTOR_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "feedline/sample_context.h"
#include "feedline/stats.h"

namespace feedline::internal {

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class StatsCollector {
 public:
  explicit StatsCollector(int num_workers);

  // Adds and zeroes what `ctx` accumulated: its stage times and the images
  // it decoded.
  void DrainContext(SampleContext& ctx);
  void AddStages(const std::array<int64_t, kNumStages>& ns);
  void AddImagesDecoded(int64_t n) { images_decoded_.fetch_add(n, std::memory_order_relaxed); }
  void AddWorker(int worker, int64_t busy_ns, int64_t samples);
  void AddError(const std::string& reason);
  void AddSkipped() { skipped_.fetch_add(1, std::memory_order_relaxed); }
  void AddReplaced() { replaced_.fetch_add(1, std::memory_order_relaxed); }
  void AddFailedSubstitutes(int64_t n) {
    failed_substitutes_.fetch_add(n, std::memory_order_relaxed);
  }
  void AddBatch() { batches_.fetch_add(1, std::memory_order_relaxed); }
  void AddWait(int64_t ns) { wait_ns_.fetch_add(ns, std::memory_order_relaxed); }
  // Marks the first Next() and the first delivered batch (first call wins).
  void MarkStart();
  void MarkFirstBatch();

  StatsSnapshot Snapshot() const;

  // The cumulative counters the tuner reads, cheaply (no allocation, no
  // lock): batches, samples, the consumer's wait and the workers' busy time
  // summed.
  struct Totals {
    int64_t batches = 0;
    int64_t samples = 0;
    int64_t wait_ns = 0;
    int64_t busy_ns = 0;
  };
  Totals ReadTotals() const;

 private:
  struct Worker {
    std::atomic<int64_t> busy_ns{0};
    std::atomic<int64_t> samples{0};
  };
  std::unique_ptr<Worker[]> workers_;
  int num_workers_;
  std::atomic<int64_t> samples_{0};
  std::atomic<int64_t> batches_{0};
  std::atomic<int64_t> errors_{0};
  std::atomic<int64_t> skipped_{0};
  std::atomic<int64_t> replaced_{0};
  std::atomic<int64_t> failed_substitutes_{0};
  std::atomic<int64_t> images_decoded_{0};
  std::atomic<int64_t> wait_ns_{0};
  std::atomic<int64_t> start_ns_{-1};
  std::atomic<int64_t> first_batch_ns_{-1};
  std::array<std::atomic<int64_t>, kNumStages> stage_ns_{};
  mutable std::mutex reasons_mu_;
  std::map<std::string, int64_t> reasons_;  // GUARDED_BY(reasons_mu_)
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_STATS_COLLECTOR_H_
