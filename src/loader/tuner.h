// Tuner: decides how many workers run and how many batch slots may exist
// (the prefetch depth) from what the loader measured: the consumer's wait
// for batches, the workers' busy time, batches and samples delivered, the
// bytes of a slot, within the cores and the memory budget it was given.
//
// A pure, deterministic model: it reads no clock and starts no thread. Its
// owner feeds it cumulative counters together with the time they were read
// (Observe), and reads the setting it wants (workers(), slots()). The same
// observations always give the same decisions, so it is tested with scripted
// workloads and a fake clock. docs/tuning.md describes the rules and their
// limits.
//
// Thread safety: none; one owner calls it (the engine does under its lock).
//
// Example:
//   TunerConfig config;
//   config.max_workers = 8;
//   config.memory_budget_bytes = 1 << 30;
//   Tuner tuner(config);
//   ...  // every few batches:
//   tuner.Observe({now_ns, batches, samples, wait_ns, busy_ns, slot_bytes});
//   engine.SetActiveWorkers(tuner.workers());
//   engine.SetSlotLimit(tuner.slots());
#ifndef FEEDLINE_SRC_LOADER_TUNER_H_
#define FEEDLINE_SRC_LOADER_TUNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/stats.h"
#include "feedline/tuning.h"

namespace feedline::internal {

struct TunerConfig {
  // Which settings the tuner owns; the other stays as given.
  bool tune_workers = true;
  bool tune_slots = true;
  // The most workers it may run: the cores this process may use, shared
  // among the ranks of the host (tuner_resources.h). At least 1.
  int max_workers = 1;
  // With tune_workers false: the workers, fixed. With it: where to start
  // (0: min(max_workers, kStartWorkers)).
  int workers = 0;
  // With tune_slots false: slots = max(2, workers * prefetch_factor), which
  // follows the worker count when that is tuned.
  int prefetch_factor = 2;
  // The engine's own limit on slots.
  int max_slots = 65536;
  // Bytes all slots together may take (0: no budget). With the size of a
  // slot (TunerObservation::slot_bytes) it caps the slots.
  int64_t memory_budget_bytes = 0;
  // Workers are processes: changing their number costs a fork or a kill, so
  // the tuner waits longer and needs the same verdict several times.
  bool costly_workers = false;
  // A measurement window: at least this long and this many batches.
  int64_t window_ns = 200'000'000;
  int64_t window_batches = 6;
};

// Cumulative counters and the time they were read.
struct TunerObservation {
  int64_t now_ns = 0;
  int64_t batches = 0;     // delivered to the consumer
  int64_t samples = 0;     // produced by the workers
  int64_t wait_ns = 0;     // the consumer's time waiting in Next()
  int64_t busy_ns = 0;     // the workers' time loading and collating, summed
  int64_t slot_bytes = 0;  // one slot's batch storage (0: not known yet)
  // The running epoch. No batch is loaded ahead across an epoch's start, so
  // a window that holds one has a wait no setting removes: it is not judged
  // (unless every window does, as with very short epochs).
  int64_t epoch = 0;
};

class Tuner {
 public:
  // The thresholds of the rules (docs/tuning.md).
  static constexpr int kStartWorkers = 4;     // thread workers start at min(max, 4)
  static constexpr int kMinSlots = 2;         // the engine never has fewer
  static constexpr double kHighWait = 0.01;   // above: the loop waits for data
  // Above: the loop waits a lot; slots go at once to the fixed default
  // (workers x kDefaultPrefetch) when more slots are the answer.
  static constexpr double kBigWait = 0.05;
  // Add fast: with thread workers and no change being judged, a window in
  // which the loop waited more than this share is judged once it holds 2
  // batches and a quarter of the window's time, not the whole window.
  static constexpr double kUrgentWait = 0.25;
  static constexpr double kLowWait = 0.005;   // below: the loader is ahead
  static constexpr double kMinGain = kTunerMinGain;  // a change must raise throughput this much
  static constexpr double kIdleWorkers = 0.85;  // utilization below: workers lacked slots
  // Fewer workers only while the rest would still load a batch in this
  // share of a step.
  static constexpr double kShrinkHeadroom = 0.85;
  static constexpr double kRegimeChange = 0.3;  // step or cost change that forgets limits
  // The library's fixed prefetch_factor: workers x this is the fixed default.
  static constexpr int kDefaultPrefetch = 2;
  // Slots whose fixed default set takes at most this many bytes are never
  // fewer than that default: the memory saved is nothing, and each slot
  // fewer costs throughput when the hand-off of a batch dominates.
  static constexpr int64_t kCheapSlotsBytes = int64_t{16} << 20;
  // Workers at their limit, loading a batch within this share of the step:
  // a deeper prefetch may still absorb the slow ones.
  static constexpr double kNearStep = 1.2;
  // Calm windows before each give-back (x2 after each one taken back, up
  // to kMaxShrinkBackoff x): remove slowly.
  static constexpr int kCalmWindows = 5;
  static constexpr int kCalmWindowsCostly = 6;
  static constexpr int kMaxShrinkBackoff = 8;
  // An added slot fills only as fast as the loader is ahead of the loop;
  // it is judged once it could have filled, after at most this many batches.
  static constexpr int64_t kMaxSettleBatches = 50;
  static constexpr size_t kMaxLogged = 64;      // decisions kept (the latest)
  // Windows holding an epoch start skipped in a row, at most.
  static constexpr int kMaxSkippedWindows = 3;

  explicit Tuner(const TunerConfig& config);

  // Feeds the counters read at `o.now_ns`. Each completed window may change
  // workers() and slots(); a change is logged with its reason.
  void Observe(const TunerObservation& o);

  int workers() const { return workers_; }
  // The fixed default for `workers`: max(2, workers x kDefaultPrefetch),
  // within the memory budget.
  int DefaultSlots(int workers) const;
  // The fewest slots the tuner keeps now: the fixed default when slots are
  // cheap (kCheapSlotsBytes), else kMinSlots.
  int SlotFloor() const;
  int slots() const { return slots_; }
  // Slots the memory budget allows (max_slots when unknown).
  int slot_cap() const;
  const TunerConfig& config() const { return config_; }

  // What stats() shows: the setting, the limits and the decisions so far.
  TunerStats Snapshot() const;

 private:
  // One window's measurements.
  struct Window {
    double seconds = 0;
    int64_t batches = 0;
    double wait_fraction = 0;
    double step_ns = 0;          // the consumer's time per batch outside Next()
    double cost_ns = 0;          // worker time per batch
    double utilization = 0;      // busy / (workers x window)
    double batches_per_s = 0;
    double samples_per_s = 0;
  };
  enum class Probe { kNone, kWorkersUp, kWorkersDown, kSlotsUp, kSlotsDown };

  void Decide(const Window& w, int64_t now_ns, int64_t batch);
  // Evaluates the change made after the previous window; true if it was
  // reverted (nothing else is decided on this window).
  bool EvaluateProbe(const Window& w, int64_t now_ns, int64_t batch);
  void ForgetLimitsOnRegimeChange(const Window& w, int64_t now_ns);
  void ApplyBudget(int64_t now_ns, int64_t batch);
  void SetWorkers(int workers, Probe probe, const Window& w);
  void SetSlots(int slots, Probe probe, const Window& w);
  // Grows the slots to `to` as a probe judged once the new slots could have
  // filled (the loader gains step - capacity per batch).
  void GrowSlots(int to, const Window& w, double capacity_ns, int64_t batch);
  // Raises the slots to SlotFloor() when below it (cheap slots).
  void ApplySlotFloor(int64_t now_ns, int64_t batch);
  // Windows of calm before the next give-back.
  int CalmWindowsNeeded() const;
  void Log(int64_t now_ns, int64_t batch, std::string reason);
  int FixedSlotsFor(int workers) const;
  int WorkerLimit() const;
  int64_t ForgetAfterNs() const;

  TunerConfig config_;
  int workers_ = 1;
  int slots_ = kMinSlots;
  int start_workers_ = 1;
  int start_slots_ = kMinSlots;
  int64_t slot_bytes_ = 0;
  bool budget_warned_ = false;

  bool started_ = false;
  int64_t start_ns_ = 0;  // the first observation's time
  TunerObservation window_start_;

  // The change made after the previous window, judged on the next one.
  Probe probe_ = Probe::kNone;
  int probe_from_ = 0;
  Window probe_base_;
  // A slot probe is judged on the first window ending at or after this
  // many batches delivered.
  int64_t probe_judge_at_batch_ = 0;

  // Limits learned from reverted changes, forgotten after a while or when
  // the step or the cost per batch moves by kRegimeChange.
  int worker_ceiling_ = 0;  // 0: none
  int worker_floor_ = 0;
  int slot_ceiling_ = 0;
  int slot_floor_ = 0;
  int64_t limits_set_ns_ = 0;
  double limits_step_ns_ = 0;
  double limits_cost_ns_ = 0;

  // Hysteresis: consecutive windows with the same verdict.
  int skipped_windows_ = 0;  // in a row, for an epoch start
  int calm_windows_ = 0;     // the loader was ahead and could give something back
  int shrink_backoff_ = 1;   // x kCalmWindows; doubles when a give-back is taken back
  int starved_windows_ = 0;  // the loop waited

  std::vector<TunerDecision> log_;
  int64_t decisions_ = 0;
  double last_samples_per_s_ = 0;  // of the latest window, for the log
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_TUNER_H_
