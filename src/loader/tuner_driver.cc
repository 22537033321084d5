#include "src/loader/tuner_driver.h"

#include <utility>

namespace feedline::internal {

TunerDriver::TunerDriver(const TunerConfig& config, Apply apply, SlotBytes slot_bytes,
                         Epoch epoch)
    : apply_(std::move(apply)),
      slot_bytes_(std::move(slot_bytes)),
      epoch_(std::move(epoch)),
      tuner_(config) {
  MutexLock lock(&mu_);
  applied_workers_ = tuner_.workers();
  applied_slots_ = tuner_.slots();
}

int TunerDriver::workers() const {
  MutexLock lock(&mu_);
  return tuner_.workers();
}

int TunerDriver::slots() const {
  MutexLock lock(&mu_);
  return tuner_.slots();
}

void TunerDriver::AfterBatch(const StatsCollector& stats, int64_t now_ns) {
  if (last_check_ns_ >= 0 && now_ns - last_check_ns_ < kCheckEveryNs) return;
  last_check_ns_ = now_ns;
  const StatsCollector::Totals totals = stats.ReadTotals();
  TunerObservation o;
  o.now_ns = now_ns;
  o.batches = totals.batches;
  o.samples = totals.samples;
  o.wait_ns = totals.wait_ns;
  o.busy_ns = totals.busy_ns;
  o.slot_bytes = slot_bytes_ ? slot_bytes_() : 0;
  o.epoch = epoch_ ? epoch_() : 0;
  int workers = 0, slots = 0;
  {
    MutexLock lock(&mu_);
    tuner_.Observe(o);
    workers = tuner_.workers();
    slots = tuner_.slots();
  }
  // Applied outside the driver's lock: the controls take the engine's.
  if (workers != applied_workers_ || slots != applied_slots_) {
    apply_(workers, slots);
    applied_workers_ = workers;
    applied_slots_ = slots;
  }
}

TunerStats TunerDriver::Snapshot() const {
  MutexLock lock(&mu_);
  return tuner_.Snapshot();
}

}  // namespace feedline::internal
