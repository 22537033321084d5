// feedline: measure, tune and check data loading from the command line.
//
//   feedline bench SOURCE     throughput, stage breakdown and a diagnosis
//   feedline tune SOURCE      sweep workers x prefetch, recommend a setting
//   feedline verify SOURCE    decode every image, list the broken ones
//   feedline synth DIR        write a synthetic JPEG dataset
//   feedline pack SOURCE OUT  pack images into indexed tar shards
//
// Exit codes: 0 success, 1 failure (or broken files found), 2 bad usage.
// The command itself is tools/run_command.cc, which the Python package's
// `feedline` entry point runs too.
#include <string>
#include <vector>

#include "tools/run_command.h"

int main(int argc, char** argv) {
  return feedline::cli::RunCommand(std::vector<std::string>(argv, argv + argc), FEEDLINE_VERSION);
}
