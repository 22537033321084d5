// The limits every sample of a SOURCE is read and decoded under: a file over
// --max-file-bytes or an image over --max-pixels is a broken sample, found
// before it costs memory.
//
// Thread safety: a plain value; AddLimitOptions configures an App before
// parsing, from one thread.
#ifndef FEEDLINE_TOOLS_SOURCE_LIMITS_H_
#define FEEDLINE_TOOLS_SOURCE_LIMITS_H_

#include <CLI/CLI.hpp>
#include <cstdint>

#include "feedline/vision/decode.h"
#include "feedline/vision/read_file.h"

namespace feedline::cli {

struct SourceLimits {
  int64_t max_file_bytes = vision::kDefaultMaxFileBytes;
  int64_t max_pixels = vision::kDefaultMaxPixels;
};

// Adds --max-file-bytes and --max-pixels to `app`, bound to `limits`.
void AddLimitOptions(CLI::App* app, SourceLimits& limits);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SOURCE_LIMITS_H_
