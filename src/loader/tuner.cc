#include "src/loader/tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace feedline::internal {
namespace {

std::string Printf(const char* format, auto... args) {
  char buffer[320];
  std::snprintf(buffer, sizeof(buffer), format, args...);
  return buffer;
}

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

void Tuner::Observe(const TunerObservation& o) {
  if (!started_) {
    started_ = true;
    start_ns_ = o.now_ns;
    window_start_ = o;
  }
  if (o.slot_bytes > 0 && o.slot_bytes != slot_bytes_) {
    slot_bytes_ = o.slot_bytes;
    ApplyBudget(o.now_ns, o.batches);
  }
  const int64_t window_ns = config_.costly_workers ? 4 * config_.window_ns : config_.window_ns;
  const int64_t dt = o.now_ns - window_start_.now_ns;
  const int64_t db = o.batches - window_start_.batches;
  if (dt < window_ns || db < config_.window_batches || dt <= 0) return;
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
}

void Tuner::ApplyBudget(int64_t now_ns, int64_t batch) {
  const int cap = slot_cap();
  if (config_.memory_budget_bytes > 0 && slot_bytes_ > 0 &&
      config_.memory_budget_bytes / slot_bytes_ < kMinSlots && !budget_warned_) {
    budget_warned_ = true;
    Log(now_ns, batch,
        Printf("memory budget of %.1f MiB holds fewer than %d slots of %.1f MiB: the loader keeps "
               "%d (it cannot load with fewer)",
               static_cast<double>(config_.memory_budget_bytes) / (1 << 20), kMinSlots,
               static_cast<double>(slot_bytes_) / (1 << 20), kMinSlots));
  }
  if (slots_ > cap) {
    const int from = slots_;
    slots_ = cap;
    probe_ = Probe::kNone;
    Log(now_ns, batch,
        Printf("memory budget: %d slots of %.1f MiB fit in %.1f MiB: slots %d -> %d", cap,
               static_cast<double>(slot_bytes_) / (1 << 20),
               static_cast<double>(config_.memory_budget_bytes) / (1 << 20), from, slots_));
  }
}

void Tuner::ForgetLimitsOnRegimeChange(const Window& w, int64_t now_ns) {
  const bool any = worker_ceiling_ || worker_floor_ || slot_ceiling_ || slot_floor_;
  if (!any) return;
  const bool expired = now_ns - limits_set_ns_ > ForgetAfterNs();
  const bool changed = Moved(limits_step_ns_, w.step_ns, kRegimeChange) ||
                       Moved(limits_cost_ns_, w.cost_ns, kRegimeChange);
  if (expired || changed) worker_ceiling_ = worker_floor_ = slot_ceiling_ = slot_floor_ = 0;
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
      if (w.samples_per_s >= base.samples_per_s * (1 + kMinGain)) return false;
      worker_ceiling_ = probe_from_;
      remember();
      workers_ = probe_from_;
      if (!config_.tune_slots) slots_ = std::min(FixedSlotsFor(workers_), slot_cap());
      Log(now_ns, batch,
          Printf("throughput did not rise with more workers (%.0f -> %.0f samples/s): workers "
                 "back to %d",
                 base.samples_per_s, w.samples_per_s, workers_));
      return true;
    case Probe::kWorkersDown:
      if (w.wait_fraction <= kHighWait) return false;
      worker_floor_ = probe_from_;
      remember();
      workers_ = probe_from_;
      if (!config_.tune_slots) slots_ = std::min(FixedSlotsFor(workers_), slot_cap());
      Log(now_ns, batch,
          Printf("the loop waited %.1f%% with fewer workers: workers back to %d",
                 100 * w.wait_fraction, workers_));
      return true;
    case Probe::kSlotsUp:
      // A slot is memory: keep it only if the wait fell or throughput rose.
      if (w.wait_fraction <= base.wait_fraction * 0.8 ||
          w.samples_per_s >= base.samples_per_s * (1 + kMinGain)) {
        return false;
      }
      slot_ceiling_ = probe_from_;
      remember();
      slots_ = probe_from_;
      Log(now_ns, batch,
          Printf("another slot did not help (wait %.1f%% -> %.1f%%): slots back to %d",
                 100 * base.wait_fraction, 100 * w.wait_fraction, slots_));
      return true;
    case Probe::kSlotsDown:
      if (w.wait_fraction <= kHighWait) return false;
      slot_floor_ = probe_from_;
      remember();
      slots_ = probe_from_;
      Log(now_ns, batch,
          Printf("the loop waited %.1f%% with fewer slots: slots back to %d",
                 100 * w.wait_fraction, slots_));
      return true;
  }
  return false;
}

void Tuner::Decide(const Window& w, int64_t now_ns, int64_t batch) {
  if (EvaluateProbe(w, now_ns, batch)) {
    calm_windows_ = starved_windows_ = 0;
    return;
  }
  ForgetLimitsOnRegimeChange(w, now_ns);

  // What the workers could deliver if they never lacked a slot: one batch
  // per cost / workers.
  const double capacity_ns = workers_ > 0 ? w.cost_ns / workers_ : w.cost_ns;
  const bool slow_average = capacity_ns > w.step_ns;
  const int needed = config_.costly_workers ? 3 : 1;  // same verdict, consecutive windows

  if (w.wait_fraction > kHighWait) {
    calm_windows_ = 0;
    ++starved_windows_;
    const int cap = std::min(slot_cap(), slot_ceiling_ > 0 ? slot_ceiling_ : slot_cap());
    const std::string measured =
        Printf("the loop waited %.1f%% (step %.1f ms, workers deliver a batch per %.1f ms, busy "
               "%.0f%%)",
               100 * w.wait_fraction, Ms(w.step_ns), Ms(capacity_ns), 100 * w.utilization);
    if (!slow_average) {
      // The loader keeps up on average, so the wait comes from a few slow
      // batches: a deeper prefetch absorbs them; more workers would not.
      if (config_.tune_slots && slots_ < cap) {
        SetSlots(std::min(cap, slots_ + std::max(1, slots_ / 4)), Probe::kSlotsUp, w);
        Log(now_ns, batch, "jitter: " + measured + ", so a few slow batches: slots " +
                               std::to_string(probe_from_) + " -> " + std::to_string(slots_));
      }
      return;
    }
    // Slow on average, yet the workers were idle while the loop waited: they
    // had no free slot to load into (the loop holds batches).
    if (config_.tune_slots && w.utilization < kIdleWorkers && slots_ < cap && workers_ > 0) {
      SetSlots(slots_ + 1, Probe::kSlotsUp, w);
      Log(now_ns, batch, measured + ": workers lacked a free slot: slots " +
                             std::to_string(probe_from_) + " -> " + std::to_string(slots_));
      return;
    }
    // The loader is the bottleneck on average: only workers help.
    if (config_.tune_workers && workers_ < WorkerLimit() && starved_windows_ >= needed) {
      const int to = std::min(WorkerLimit(), workers_ + std::max(1, workers_ / 4));
      SetWorkers(to, Probe::kWorkersUp, w);
      starved_windows_ = 0;
      Log(now_ns, batch, "loader-bound: " + measured + ": workers " +
                             std::to_string(probe_from_) + " -> " + std::to_string(workers_));
    }
    return;
  }

  starved_windows_ = 0;
  if (w.wait_fraction >= kLowWait) {
    calm_windows_ = 0;  // in between: hold
    return;
  }
  // The loader is ahead of the step: give CPU and memory back, one change at
  // a time, each judged on the next window.
  if (++calm_windows_ < MinIntervalWindows()) return;
  const int floor = std::max(1, worker_floor_);
  if (config_.tune_workers && workers_ > floor &&
      w.cost_ns / (workers_ - 1) < kShrinkHeadroom * w.step_ns) {
    calm_windows_ = 0;
    SetWorkers(workers_ - 1, Probe::kWorkersDown, w);
    Log(now_ns, batch,
        Printf("step-bound: the loop waited %.1f%%, step %.1f ms, %d workers would deliver a batch "
               "per %.1f ms: workers %d -> %d",
               100 * w.wait_fraction, Ms(w.step_ns), workers_, Ms(w.cost_ns / workers_),
               probe_from_, workers_));
    return;
  }
  const int slot_floor = std::max(kMinSlots, slot_floor_);
  if (config_.tune_slots && slots_ > slot_floor) {
    calm_windows_ = 0;
    SetSlots(slots_ - 1, Probe::kSlotsDown, w);
    Log(now_ns, batch,
        Printf("step-bound: the loop waited %.1f%%: slots %d -> %d (memory back)",
               100 * w.wait_fraction, probe_from_, slots_));
  }
}

TunerStats Tuner::Snapshot() const {
  TunerStats s;
  s.enabled = config_.tune_workers || config_.tune_slots;
  s.workers = workers_;
  s.slots = slots_;
  s.start_workers = start_workers_;
  s.start_slots = start_slots_;
  s.max_workers = config_.max_workers;
  s.memory_budget_bytes = config_.memory_budget_bytes;
  s.slot_bytes = slot_bytes_;
  s.decisions = decisions_;
  s.log = log_;
  return s;
}

}  // namespace feedline::internal
