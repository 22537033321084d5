// `feedline bench SOURCE`: measures the loader on a dataset and reports
// throughput, stage breakdown, memory, errors and a diagnosis.
#ifndef FEEDLINE_TOOLS_BENCH_COMMAND_H_
#define FEEDLINE_TOOLS_BENCH_COMMAND_H_

#include <CLI/CLI.hpp>

#include "tools/command_line.h"

namespace feedline::cli {

Command AddBenchCommand(CLI::App& parent);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_BENCH_COMMAND_H_
