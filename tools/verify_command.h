// `feedline verify SOURCE`: decodes every image on all cores and lists each
// file that cannot be loaded, with its reason. Exits 1 if any is broken.
#ifndef FEEDLINE_TOOLS_VERIFY_COMMAND_H_
#define FEEDLINE_TOOLS_VERIFY_COMMAND_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "tools/command_line.h"

namespace feedline::cli {

Command AddVerifyCommand(CLI::App& parent);

struct BrokenFile {
  int64_t index = 0;
  std::string path;
  std::string reason;  // SampleError::reason(), or "exception"
  std::string message;
};

// Loads every sample of `dataset` with `threads` threads and returns those
// that fail, sorted by path. `on_progress(done)` is called now and then from
// one of the threads (may be empty).
std::vector<BrokenFile> FindBrokenSamples(
    const Dataset& dataset, int threads, const std::function<void(int64_t done)>& on_progress = {});

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_VERIFY_COMMAND_H_
