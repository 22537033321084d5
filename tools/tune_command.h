// `feedline tune SOURCE`: measures each num_workers x prefetch setting in
// its steady state (the warm-up, while the pipeline creates and first fills
// its slots, is reported apart), then runs the loader's own online tuner
// ("auto") on the same data. Prints the table with the recommended setting
// marked, chosen by the tuner's rule (kTunerMinGain, feedline/tuning.h), and
// optionally plots images/s against workers as SVG with the tuner's path.
#ifndef FEEDLINE_TOOLS_TUNE_COMMAND_H_
#define FEEDLINE_TOOLS_TUNE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <vector>

#include "tools/command_line.h"

namespace feedline::cli {

Command AddTuneCommand(CLI::App& parent);

// The worker counts to try up to `max_workers`: every count up to 4, then
// steps of about 1.5x (6, 8, 12, 16, 24, ...), always ending at max_workers,
// so the sweep stays short on machines with many cores.
std::vector<int> WorkerCandidates(int max_workers);

struct TuneRow {
  int workers = 0;
  int prefetch = 0;
  double images_per_s = 0;  // steady state: after the warm-up batches
  double wait_fraction = 0;
  double peak_rss_mib = 0;
  double warmup_s = 0;  // time to deliver the warm-up batches
  double warmup_images_per_s = 0;
};

// Batches counted as warm-up for a setting: every slot it may create, filled
// once, and the first batch (thread start-up): max(2, workers x prefetch) + 1.
int64_t WarmupBatches(int workers, int prefetch);

// Images/s from the delivery of batch `warmup` - 1 to the last one, given
// when each batch was delivered (seconds) and its size; 0 when fewer than
// warmup + 1 batches were delivered.
double SteadyImagesPerSecond(const std::vector<double>& delivered_s, double images_per_batch,
                             int64_t warmup);

// The index of the recommended row, by the online tuner's rules
// (Tuner::kMinGain): for each worker count the smallest prefetch whose
// throughput a larger one does not beat by kMinGain (ties: least memory);
// then workers are added, in increasing count, while each step raises
// throughput by at least kMinGain. -1 if `rows` is empty.
int PickRecommended(const std::vector<TuneRow>& rows);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_TUNE_COMMAND_H_
