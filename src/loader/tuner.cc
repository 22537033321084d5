#include "src/loader/tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "feedline/string_printf.h"

namespace feedline::internal {
namespace {

double Ms(double ns) { return ns * 1e-6; }

// True when `now` differs from `then` by more than `share` of `then`.
bool Moved(double then, double now, double share) {
  if (then <= 0 || now <= 0) return false;
  return std::abs(now - then) > share * then;
}

}  // namespace

Tuner::Tuner(const TunerConfig& config) : config_(config) {
  config_.max_workers = std::max(1, config_.max_workers);
  config_.max_slots = std::max(kMinSlots, config_.max_slots);
  config_.prefetch_factor = std::max(1, config_.prefetch_factor);
  config_.window_batches = std::max<int64_t>(1, config_.window_batches);
  if (config_.tune_workers) {
    // Threads start near the cores (cheap to undo, and most jobs on small
    // machines are loader-bound from the first batch); processes start at
    // the same count since every later change costs a fork or a kill.
    const int start = config_.workers > 0 ? config_.workers : kStartWorkers;
    workers_ = std::clamp(start, 1, config_.max_workers);
  } else {
    workers_ = std::max(0, config_.workers);
  }
  // Slots start at the fewest that keep every worker busy on one batch while
  // the loop holds another; more are made only when a window shows the need
  // (the peak memory is what the loop pays for).
  slots_ = config_.tune_slots ? kMinSlots : FixedSlotsFor(workers_);
  slots_ = std::min(slots_, config_.max_slots);
  start_workers_ = workers_;
  start_slots_ = slots_;
}

int Tuner::FixedSlotsFor(int workers) const {
  const int64_t slots = int64_t{std::max(0, workers)} * config_.prefetch_factor;
  return static_cast<int>(std::clamp<int64_t>(slots, kMinSlots, config_.max_slots));
}

int Tuner::slot_cap() const {
  int cap = config_.max_slots;
  if (config_.memory_budget_bytes > 0 && slot_bytes_ > 0) {
    const int64_t fit = config_.memory_budget_bytes / slot_bytes_;
    cap = static_cast<int>(std::min<int64_t>(cap, fit));
  }
  return std::max(kMinSlots, cap);
}

int Tuner::DefaultSlots(int workers) const {
  const int64_t slots =
      std::max<int64_t>(kMinSlots, int64_t{std::max(0, workers)} * kDefaultPrefetch);
  return static_cast<int>(std::min<int64_t>(slots, slot_cap()));
}

int Tuner::SlotFloor() const {
  if (!config_.tune_slots || slot_bytes_ <= 0) return kMinSlots;
  const int slots = DefaultSlots(workers_);
  return int64_t{slots} * slot_bytes_ <= kCheapSlotsBytes ? slots : kMinSlots;
}

int Tuner::CalmWindowsNeeded() const {
  return (config_.costly_workers ? kCalmWindowsCostly : kCalmWindows) * shrink_backoff_;
}

int Tuner::WorkerLimit() const {
  int limit = config_.max_workers;
  if (worker_ceiling_ > 0) limit = std::min(limit, worker_ceiling_);
  return limit;
}

int64_t Tuner::ForgetAfterNs() const {
  // Long enough that probing again costs little of the run.
  return config_.costly_workers ? 120'000'000'000 : 30'000'000'000;
}

void Tuner::Log(int64_t now_ns, int64_t batch, std::string reason) {
  ++decisions_;
  if (log_.size() == kMaxLogged) log_.erase(log_.begin());
  log_.push_back(TunerDecision{static_cast<double>(now_ns - start_ns_) * 1e-9, batch, workers_,
                               slots_, last_samples_per_s_, std::move(reason)});
}

void Tuner::SetWorkers(int workers, Probe probe, const Window& w) {
  probe_from_ = workers_;
  workers_ = workers;
  if (!config_.tune_slots) slots_ = std::min(FixedSlotsFor(workers_), slot_cap());
  probe_ = probe;
  probe_base_ = w;
}

void Tuner::SetSlots(int slots, Probe probe, const Window& w) {
  probe_from_ = slots_;
  slots_ = slots;
  probe_ = probe;
  probe_base_ = w;
}

void Tuner::GrowSlots(int to, const Window& w, double capacity_ns, int64_t batch) {
  const int added = to - slots_;
  SetSlots(to, Probe::kSlotsUp, w);
  // The loader gains (step - capacity) on the loop per batch, and a slot
  // holds a step's worth: judged in the window after the added slots could
  // have filled, not the next one (where a slot that is still filling would
  // read as a slot that did not help).
  const double step = std::max(w.step_ns, 1.0);
  const double gain = std::max(step - capacity_ns, 0.05 * step);
  const double settle = std::ceil(added * step / gain);
  probe_judge_at_batch_ =
      batch + std::clamp<int64_t>(static_cast<int64_t>(settle), config_.window_batches,
                                  std::max<int64_t>(config_.window_batches, kMaxSettleBatches));
}

void Tuner::ApplySlotFloor(int64_t now_ns, int64_t batch) {
  const int floor = SlotFloor();
  if (!config_.tune_slots || slots_ >= floor) return;
  const int from = slots_;
  slots_ = floor;
  Log(now_ns, batch,
      StringPrintf("cheap slots: %d of %.1f KiB take %.1f KiB, so the fixed default (workers x %d) is "
             "kept: slots %d -> %d",
             floor, static_cast<double>(slot_bytes_) / 1024,
             static_cast<double>(floor) * static_cast<double>(slot_bytes_) / 1024,
             kDefaultPrefetch, from, slots_));
}

void Tuner::Observe(const TunerObservation& o) {
  if (!started_) {
    started_ = true;
    start_ns_ = o.now_ns;
    window_start_ = o;
  }
  if (o.slot_bytes > 0 && o.slot_bytes != slot_bytes_) {
    slot_bytes_ = o.slot_bytes;
    ApplyBudget(o.now_ns, o.batches);
    ApplySlotFloor(o.now_ns, o.batches);
  }
  const int64_t window_ns = config_.costly_workers ? 4 * config_.window_ns : config_.window_ns;
  const int64_t dt = o.now_ns - window_start_.now_ns;
  const int64_t db = o.batches - window_start_.batches;
  const bool full = dt >= window_ns && db >= config_.window_batches;
  // A step that just got shorter leaves the loop waiting for most of every
  // batch: that is seen in a quarter of a window. Only additions come of
  // it (the loop waited), and only for threads (a process costs a fork).
  const bool urgent = !config_.costly_workers && probe_ == Probe::kNone &&
                      dt >= window_ns / 4 && db >= 2 &&
                      static_cast<double>(o.wait_ns - window_start_.wait_ns) >
                          kUrgentWait * static_cast<double>(dt);
  if (!(full || urgent) || dt <= 0) return;
  if (o.epoch != window_start_.epoch && skipped_windows_ < kMaxSkippedWindows) {
    ++skipped_windows_;
    window_start_ = o;
    return;
  }
  skipped_windows_ = 0;

  Window w;
  w.seconds = static_cast<double>(dt) * 1e-9;
  w.batches = db;
  const double wait = static_cast<double>(std::max<int64_t>(0, o.wait_ns - window_start_.wait_ns));
  const double busy = static_cast<double>(std::max<int64_t>(0, o.busy_ns - window_start_.busy_ns));
  w.wait_fraction = std::min(1.0, wait / static_cast<double>(dt));
  w.step_ns = std::max(0.0, static_cast<double>(dt) - wait) / static_cast<double>(db);
  w.cost_ns = busy / static_cast<double>(db);
  w.utilization = workers_ > 0 ? busy / (static_cast<double>(workers_) * static_cast<double>(dt)) : 1;
  w.batches_per_s = static_cast<double>(db) / w.seconds;
  w.samples_per_s = static_cast<double>(o.samples - window_start_.samples) / w.seconds;
  window_start_ = o;
  last_samples_per_s_ = w.samples_per_s;
  Decide(w, o.now_ns, o.batches);
  ApplySlotFloor(o.now_ns, o.batches);  // the worker count may have moved it
}

void Tuner::ApplyBudget(int64_t now_ns, int64_t batch) {
  const int cap = slot_cap();
  if (config_.memory_budget_bytes > 0 && slot_bytes_ > 0 &&
      config_.memory_budget_bytes / slot_bytes_ < kMinSlots && !budget_warned_) {
    budget_warned_ = true;
    Log(now_ns, batch,
        StringPrintf("memory budget of %.1f MiB holds fewer than %d slots of %.1f MiB: the loader keeps "
               "%d (it cannot load with fewer)",
               static_cast<double>(config_.memory_budget_bytes) / (1 << 20), kMinSlots,
               static_cast<double>(slot_bytes_) / (1 << 20), kMinSlots));
  }
  if (slots_ > cap) {
    const int from = slots_;
    slots_ = cap;
    probe_ = Probe::kNone;
    Log(now_ns, batch,
        StringPrintf("memory budget: %d slots of %.1f MiB fit in %.1f MiB: slots %d -> %d", cap,
               static_cast<double>(slot_bytes_) / (1 << 20),
               static_cast<double>(config_.memory_budget_bytes) / (1 << 20), from, slots_));
  }
}

void Tuner::ForgetLimitsOnRegimeChange(const Window& w, int64_t now_ns) {
  const bool any =
      worker_ceiling_ || worker_floor_ || slot_ceiling_ || slot_floor_ || shrink_backoff_ > 1;
  if (!any) return;
  const bool expired = now_ns - limits_set_ns_ > ForgetAfterNs();
  const bool changed = Moved(limits_step_ns_, w.step_ns, kRegimeChange) ||
                       Moved(limits_cost_ns_, w.cost_ns, kRegimeChange);
  if (expired || changed) {
    worker_ceiling_ = worker_floor_ = slot_ceiling_ = slot_floor_ = 0;
    shrink_backoff_ = 1;
  }
}

bool Tuner::EvaluateProbe(const Window& w, int64_t now_ns, int64_t batch) {
  const Probe probe = std::exchange(probe_, Probe::kNone);
  const Window& base = probe_base_;
  auto remember = [&] {
    limits_set_ns_ = now_ns;
    limits_step_ns_ = w.step_ns;
    limits_cost_ns_ = w.cost_ns;
  };
  switch (probe) {
    case Probe::kNone:
      return false;
    case Probe::kWorkersUp:
      // More workers must have raised throughput; otherwise they only add
      // contention (the 16-worker drop) and CPU taken from the training.
      if (w.batches_per_s >= base.batches_per_s * (1 + kMinGain)) return false;
      worker_ceiling_ = probe_from_;
      remember();
      workers_ = probe_from_;
      if (!config_.tune_slots) slots_ = std::min(FixedSlotsFor(workers_), slot_cap());
      Log(now_ns, batch,
          StringPrintf("throughput did not rise with more workers (%.0f -> %.0f samples/s): workers "
                 "back to %d",
                 base.samples_per_s, w.samples_per_s, workers_));
      return true;
    case Probe::kWorkersDown:
      if (w.wait_fraction <= kHighWait) return false;
      worker_floor_ = probe_from_;
      shrink_backoff_ = std::min(kMaxShrinkBackoff, 2 * shrink_backoff_);
      remember();
      workers_ = probe_from_;
      if (!config_.tune_slots) slots_ = std::min(FixedSlotsFor(workers_), slot_cap());
      Log(now_ns, batch,
          StringPrintf("the loop waited %.1f%% with fewer workers: workers back to %d",
                 100 * w.wait_fraction, workers_));
      return true;
    case Probe::kSlotsUp:
      // A slot is memory: keep it only if the wait fell or throughput rose.
      // One window of a jittery loader is noisy: only a slot under which
      // the loop waited no less, at no higher throughput, is taken back.
      if (w.wait_fraction <= kHighWait || w.wait_fraction < base.wait_fraction ||
          w.batches_per_s >= base.batches_per_s * (1 + kMinGain)) {
        return false;
      }
      slot_ceiling_ = probe_from_;
      remember();
      slots_ = std::max(probe_from_, SlotFloor());
      Log(now_ns, batch,
          StringPrintf("another slot did not help (wait %.1f%% -> %.1f%%): slots back to %d",
                 100 * base.wait_fraction, 100 * w.wait_fraction, slots_));
      return true;
    case Probe::kSlotsDown:
      if (w.wait_fraction <= kHighWait) return false;
      slot_floor_ = probe_from_;
      shrink_backoff_ = std::min(kMaxShrinkBackoff, 2 * shrink_backoff_);
      remember();
      slots_ = probe_from_;
      Log(now_ns, batch,
          StringPrintf("the loop waited %.1f%% with fewer slots: slots back to %d",
                 100 * w.wait_fraction, slots_));
      return true;
  }
  return false;
}

void Tuner::Decide(const Window& w, int64_t now_ns, int64_t batch) {
  // What the workers could deliver if they never lacked a slot: one batch
  // per cost / workers.
  const double capacity_ns = workers_ > 0 ? w.cost_ns / workers_ : w.cost_ns;
  const bool slow_average = capacity_ns > w.step_ns;
  const bool starved = w.wait_fraction > kHighWait;
  if (probe_ == Probe::kSlotsUp && batch < probe_judge_at_batch_) {
    // Added slots may still be filling: wait for them, unless the loader is
    // now too slow on average and more workers are due (the slots stay).
    if (!(starved && slow_average && config_.tune_workers && workers_ < WorkerLimit())) return;
    probe_ = Probe::kNone;
  }
  if (EvaluateProbe(w, now_ns, batch)) {
    calm_windows_ = starved_windows_ = 0;
    return;
  }
  ForgetLimitsOnRegimeChange(w, now_ns);

  const int needed = config_.costly_workers ? 3 : 1;  // same verdict, consecutive windows

  if (starved) {
    // Add fast: the first window that shows the wait acts.
    calm_windows_ = 0;
    ++starved_windows_;
    const int cap = std::min(slot_cap(), slot_ceiling_ > 0 ? slot_ceiling_ : slot_cap());
    const std::string measured =
        StringPrintf("the loop waited %.1f%% (step %.1f ms, workers deliver a batch per %.1f ms, busy "
               "%.0f%%)",
               100 * w.wait_fraction, Ms(w.step_ns), Ms(capacity_ns), 100 * w.utilization);
    // A big wait that slots can absorb takes them to the fixed default at
    // once, not a quarter more per window.
    auto deeper = [&](int by) {
      int to = slots_ + by;
      if (w.wait_fraction > kBigWait) to = std::max(to, DefaultSlots(workers_));
      return std::min(cap, to);
    };
    if (!slow_average) {
      // The loader keeps up on average, so the wait comes from a few slow
      // batches: a deeper prefetch absorbs them; more workers would not.
      if (config_.tune_slots && slots_ < cap) {
        const int from = slots_;
        GrowSlots(deeper(std::max(1, slots_ / 4)), w, capacity_ns, batch);
        Log(now_ns, batch, "jitter: " + measured + ", so a few slow batches: slots " +
                               std::to_string(from) + " -> " + std::to_string(slots_));
      }
      return;
    }
    // Slow on average, yet the workers were idle while the loop waited: they
    // had no free slot to load into (the loop holds batches).
    if (config_.tune_slots && w.utilization < kIdleWorkers && slots_ < cap && workers_ > 0) {
      const int from = slots_;
      GrowSlots(slots_ + 1, w, capacity_ns, batch);
      Log(now_ns, batch, measured + ": workers lacked a free slot: slots " + std::to_string(from) +
                             " -> " + std::to_string(slots_));
      return;
    }
    // The loader is the bottleneck on average: more workers, if it may.
    if (config_.tune_workers && workers_ < WorkerLimit()) {
      if (starved_windows_ >= needed) {
        const int to = std::min(WorkerLimit(), workers_ + std::max(1, workers_ / 4));
        SetWorkers(to, Probe::kWorkersUp, w);
        starved_windows_ = 0;
        Log(now_ns, batch, "loader-bound: " + measured + ": workers " +
                               std::to_string(probe_from_) + " -> " + std::to_string(workers_));
      }
      return;
    }
    // No more workers (the cores, a ceiling, or a fixed count), and they
    // load a batch about as fast as the step: the slow batches still make
    // the loop wait, and a deeper prefetch absorbs those that a slightly
    // faster loader can make up for. Judged once the slots could fill.
    // At most twice the fixed default: a loader slower than the step on
    // average empties any depth of prefetch.
    const int near_cap = std::min(cap, 2 * DefaultSlots(workers_));
    if (config_.tune_slots && slots_ < near_cap && capacity_ns <= kNearStep * w.step_ns) {
      const int from = slots_;
      GrowSlots(std::min(near_cap, deeper(1)), w, capacity_ns, batch);
      Log(now_ns, batch, "at the worker limit: " + measured +
                             ", near the step: slots " + std::to_string(from) + " -> " +
                             std::to_string(slots_));
    }
    return;
  }

  starved_windows_ = 0;
  if (w.wait_fraction >= kLowWait) {
    calm_windows_ = 0;  // in between: hold
    return;
  }
  // The loader is ahead of the step: give CPU and memory back, one change at
  // a time, each judged on the next window, and only after several calm
  // windows in a row (a short pause of the loop is no reason; after a
  // give-back that was taken back, twice as many).
  const int worker_floor = std::max(1, worker_floor_);
  const bool fewer_workers = config_.tune_workers && workers_ > worker_floor &&
                             w.cost_ns / (workers_ - 1) < kShrinkHeadroom * w.step_ns;
  // Slots go back only while the workers are clearly faster than the step
  // (they refill the rest at once); near it they absorb the slow batches.
  const int slot_floor = std::max({kMinSlots, slot_floor_, SlotFloor()});
  const bool fewer_slots = config_.tune_slots && slots_ > slot_floor &&
                           capacity_ns < kShrinkHeadroom * w.step_ns;
  if (!fewer_workers && !fewer_slots) {
    calm_windows_ = 0;
    return;
  }
  if (++calm_windows_ < CalmWindowsNeeded()) return;
  calm_windows_ = 0;
  if (fewer_workers) {
    SetWorkers(workers_ - 1, Probe::kWorkersDown, w);
    Log(now_ns, batch,
        StringPrintf("step-bound: the loop waited %.1f%%, step %.1f ms, %d workers would deliver a batch "
               "per %.1f ms: workers %d -> %d",
               100 * w.wait_fraction, Ms(w.step_ns), workers_, Ms(w.cost_ns / workers_),
               probe_from_, workers_));
    return;
  }
  SetSlots(slots_ - 1, Probe::kSlotsDown, w);
  Log(now_ns, batch,
      StringPrintf("step-bound: the loop waited %.1f%%: slots %d -> %d (memory back)",
             100 * w.wait_fraction, probe_from_, slots_));
}

TunerStats Tuner::Snapshot() const {
  TunerStats s;
  s.enabled = config_.tune_workers || config_.tune_slots;
  s.workers = workers_;
  s.slots = slots_;
  s.start_workers = start_workers_;
  s.start_slots = start_slots_;
  s.max_workers = config_.max_workers;
  s.costly_workers = config_.costly_workers;
  s.memory_budget_bytes = config_.memory_budget_bytes;
  s.slot_bytes = slot_bytes_;
  s.decisions = decisions_;
  s.log = log_;
  return s;
}

}  // namespace feedline::internal
