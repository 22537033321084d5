// `feedline tune SOURCE`: runs a short benchmark for each num_workers x
// prefetch setting, prints the table with the recommended setting marked,
// and optionally plots images/s against workers as SVG.
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
  double images_per_s = 0;
  double wait_fraction = 0;
  double peak_rss_mib = 0;
};

// A setting within this share of the best throughput counts as good enough.
inline constexpr double kGoodEnough = 0.95;

// The index of the recommended row: among rows within kGoodEnough of the best
// images/s, the one with the fewest workers, then the smallest prefetch, then
// the least memory. -1 if `rows` is empty.
int PickRecommended(const std::vector<TuneRow>& rows);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_TUNE_COMMAND_H_
