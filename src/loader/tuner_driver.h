// TunerDriver: runs a Tuner beside an engine. The consumer calls AfterBatch
// after each delivered batch; when a measurement is due it reads the
// loader's counters, feeds the tuner and applies a changed setting through
// the engine's runtime controls. stats() may read what it chose from any
// thread.
//
// Cost: AfterBatch reads the clock and returns unless kCheckEveryNs passed
// since the last check; a check reads a few atomics and, rarely, applies a
// setting.
//
// Thread safety: AfterBatch from the consumer thread only; Snapshot from any
// thread (the tuner is guarded by the driver's own mutex, never held while
// the engine's controls run).
#ifndef FEEDLINE_SRC_LOADER_TUNER_DRIVER_H_
#define FEEDLINE_SRC_LOADER_TUNER_DRIVER_H_

#include <cstdint>
#include <functional>

#include "feedline/stats.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"
#include "src/loader/stats_collector.h"
#include "src/loader/tuner.h"

namespace feedline::internal {

class TunerDriver {
 public:
  // How often the counters are read (the tuner's windows are longer).
  static constexpr int64_t kCheckEveryNs = 20'000'000;

  // Applies a setting: active workers, slot limit.
  using Apply = std::function<void(int workers, int slots)>;
  // The bytes of one batch slot now (0 while unknown).
  using SlotBytes = std::function<int64_t()>;
  // The running epoch.
  using Epoch = std::function<int64_t()>;

  TunerDriver(const TunerConfig& config, Apply apply, SlotBytes slot_bytes, Epoch epoch);

  int workers() const EXCLUDES(mu_);
  int slots() const EXCLUDES(mu_);

  // After the consumer received a batch, at `now_ns` (NowNs()).
  void AfterBatch(const StatsCollector& stats, int64_t now_ns) EXCLUDES(mu_);
  TunerStats Snapshot() const EXCLUDES(mu_);

 private:
  Apply apply_;
  SlotBytes slot_bytes_;
  Epoch epoch_;
  int64_t last_check_ns_ = -1;  // consumer thread only
  int applied_workers_ = 0;     // consumer thread only
  int applied_slots_ = 0;
  mutable Mutex mu_;
  Tuner tuner_ GUARDED_BY(mu_);
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_TUNER_DRIVER_H_
