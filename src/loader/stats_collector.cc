#include "src/loader/stats_collector.h"

#include "src/core/sample_context_access.h"

namespace feedline::internal {

StatsCollector::StatsCollector(int num_workers)
    // The caller's thread counts as worker 0 when num_workers is 0.
    : workers_(new Worker[static_cast<size_t>(num_workers > 0 ? num_workers : 1)]),
      num_workers_(num_workers > 0 ? num_workers : 1) {}

void StatsCollector::DrainContext(SampleContext& ctx) {
  AddStages(SampleContextAccess::DrainStageTimes(ctx));
  AddImagesDecoded(SampleContextAccess::DrainImagesDecoded(ctx));
}

void StatsCollector::AddStages(const std::array<int64_t, kNumStages>& ns) {
  for (int i = 0; i < kNumStages; ++i) {
    if (ns[static_cast<size_t>(i)] != 0) {
      stage_ns_[static_cast<size_t>(i)].fetch_add(ns[static_cast<size_t>(i)], std::memory_order_relaxed);
    }
  }
}

void StatsCollector::AddWorker(int worker, int64_t busy_ns, int64_t samples) {
  Worker& w = workers_[static_cast<size_t>(worker < 0 ? 0 : worker)];
  w.busy_ns.fetch_add(busy_ns, std::memory_order_relaxed);
  w.samples.fetch_add(samples, std::memory_order_relaxed);
  samples_.fetch_add(samples, std::memory_order_relaxed);
}

void StatsCollector::AddError(const std::string& reason) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(reasons_mu_);
  ++reasons_[reason];
}

void StatsCollector::MarkStart() {
  if (start_ns_.load(std::memory_order_relaxed) >= 0) return;
  int64_t expected = -1;
  start_ns_.compare_exchange_strong(expected, NowNs());
}

void StatsCollector::MarkFirstBatch() {
  if (first_batch_ns_.load(std::memory_order_relaxed) >= 0) return;
  int64_t expected = -1;
  first_batch_ns_.compare_exchange_strong(expected, NowNs());
}

StatsCollector::Totals StatsCollector::ReadTotals() const {
  Totals t;
  t.batches = batches_.load(std::memory_order_relaxed);
  t.samples = samples_.load(std::memory_order_relaxed);
  t.wait_ns = wait_ns_.load(std::memory_order_relaxed);
  for (int i = 0; i < num_workers_; ++i) {
    t.busy_ns += workers_[static_cast<size_t>(i)].busy_ns.load(std::memory_order_relaxed);
  }
  return t;
}

StatsSnapshot StatsCollector::Snapshot() const {
  StatsSnapshot s;
  s.samples = samples_.load();
  s.batches = batches_.load();
  s.errors = errors_.load();
  s.skipped = skipped_.load();
  s.replaced = replaced_.load();
  s.failed_substitutes = failed_substitutes_.load();
  s.images_decoded = images_decoded_.load();
  for (int i = 0; i < kNumStages; ++i) s.stage_ns[static_cast<size_t>(i)] = stage_ns_[static_cast<size_t>(i)].load();
  s.consumer_wait_ns = wait_ns_.load();
  const int64_t start = start_ns_.load();
  const int64_t first = first_batch_ns_.load();
  if (start >= 0) {
    s.elapsed_ns = NowNs() - start;
    if (first >= 0) s.first_batch_ns = first - start;
  }
  for (int i = 0; i < num_workers_; ++i) {
    s.workers.push_back(WorkerStats{workers_[static_cast<size_t>(i)].busy_ns.load(),
                                    workers_[static_cast<size_t>(i)].samples.load()});
  }
  {
    std::lock_guard<std::mutex> lock(reasons_mu_);
    s.errors_by_reason = reasons_;
  }
  return s;
}

}  // namespace feedline::internal
