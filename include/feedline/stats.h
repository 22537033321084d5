// Stats: what the loader measured, as a snapshot that can be taken at any
// time from any thread (counters are atomics).
#ifndef FEEDLINE_STATS_H_
#define FEEDLINE_STATS_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "feedline/export.h"
#include "feedline/sample_context.h"

namespace feedline {

struct FEEDLINE_EXPORT WorkerStats {
  int64_t busy_ns = 0;  // time spent producing samples and collating
  int64_t samples = 0;
};

// One change the tuner made (num_workers or prefetch_factor "auto";
// docs/tuning.md).
struct FEEDLINE_EXPORT TunerDecision {
  double at_s = 0;      // seconds since the tuner's first measurement
  int64_t batch = 0;    // batches delivered by then
  int workers = 0;      // active workers from then on
  int slots = 0;        // batch slots allowed from then on
  double samples_per_s = 0;  // throughput over the window that led to it
  std::string reason;   // in plain words, with the measurements behind it
};

// What the tuner chose; `enabled` is false when nothing is "auto".
struct FEEDLINE_EXPORT TunerStats {
  bool enabled = false;
  int workers = 0;                  // active workers now
  int slots = 0;                    // batch slots allowed now
  int start_workers = 0;            // where it started
  int start_slots = 0;
  int max_workers = 0;              // the cores it may use (shared among local ranks)
  // The workers are processes: a change of their count forks or kills one,
  // so the tuner waits for longer, steadier evidence (docs/tuning.md).
  bool costly_workers = false;
  int64_t memory_budget_bytes = 0;  // what all slots together may take (0: none)
  int64_t slot_bytes = 0;           // one slot's batch storage (0: not known yet)
  int64_t decisions = 0;            // changes made; the latest are in `log`
  std::vector<TunerDecision> log;
};

struct FEEDLINE_EXPORT StatsSnapshot {
  TunerStats tuner;      // what the tuner chose and when
  int64_t samples = 0;   // samples produced (substitutes included)
  int64_t batches = 0;   // batches delivered to the consumer
  int64_t errors = 0;    // samples that failed to load (a substitute is not counted here)
  int64_t skipped = 0;   // samples dropped by error_policy skip
  int64_t replaced = 0;  // samples replaced by error_policy replace
  int64_t failed_substitutes = 0;  // substitutes that failed too (error_policy replace)
  int64_t worker_restarts = 0;     // worker processes started again after one died
  // Images the datasets' vision pipelines decoded, whole or in part (a
  // mosaic decodes each image of its batch once).
  int64_t images_decoded = 0;
  // Batch slots that exist now (each holds one batch: the consumer's, those
  // being loaded and those ready), and the bytes of batch storage they
  // hold: the loader's memory for batches.
  int slots = 0;
  int64_t slot_bytes = 0;
  std::map<std::string, int64_t> errors_by_reason;  // `errors` by SampleError::reason()
  std::array<int64_t, kNumStages> stage_ns{};  // summed over workers
  int64_t consumer_wait_ns = 0;  // time the consumer spent waiting in Next()
  int64_t first_batch_ns = -1;   // from the first Next() to the first batch
  int64_t elapsed_ns = 0;        // since the first Next()
  // The training loop as its calls show it (measured by DataLoader, not the
  // engine; loop_report.h turns these into step time, wait share, verdict):
  int64_t steps = 0;              // delivered batches the loop came back from
  int64_t step_ns = 0;            // summed time from a delivery to the loop's next call
  int64_t delivered_samples = 0;  // rows of the batches delivered
  std::vector<WorkerStats> workers;

  // Share of elapsed time the consumer waited for data (0 when nothing ran).
  double wait_fraction() const;
};

}  // namespace feedline

#endif  // FEEDLINE_STATS_H_
