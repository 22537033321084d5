// SOURCE, the data a subcommand reads: an image folder (ImageFolder layout,
// one subfolder per class) or a file list (one "path label" per line, the
// paths relative to the list file's folder).
// Opening it checks that it exists and holds images, and builds the image
// dataset for a pipeline.
//
// Thread safety: pure functions; the datasets are immutable.
#ifndef FEEDLINE_TOOLS_SOURCE_H_
#define FEEDLINE_TOOLS_SOURCE_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/read_file.h"

namespace feedline::cli {

enum class SourceKind { kFolder, kFileList };

// The pipelines `bench` and `tune` accept.
const std::vector<std::string>& PipelineNames();  // train, val, decode, read

// The limits every sample is read and decoded under (--max-file-bytes,
// --max-pixels).
struct SourceLimits {
  int64_t max_file_bytes = vision::kDefaultMaxFileBytes;
  int64_t max_pixels = vision::kDefaultMaxPixels;
};

// Adds --max-file-bytes and --max-pixels to `app`, bound to `limits`.
void AddLimitOptions(CLI::App* app, SourceLimits& limits);

// How `bench` and `tune` load SOURCE: the options both take, with one help
// text each.
struct LoadShape {
  std::string pipeline = "train";  // one of PipelineNames()
  long long batch = 64;
  int image_size = 224;  // output pixels of the train and val pipelines
  unsigned long long seed = 0;
  double step_ms = 0;  // simulated training step per batch
};
// Adds --pipeline, --batch, --size, --seed and --step-ms, bound to `shape`.
// Returns --pipeline (bench's --synthetic excludes it).
CLI::Option* AddLoadShapeOptions(CLI::App* app, LoadShape& shape);

// What `source` is. Throws UsageError if it does not exist, is an empty
// folder or file, is neither a folder nor a regular file, or is a file that
// cannot be a file list (an image, a binary file).
SourceKind CheckSource(const std::string& source);

// The dataset over `source` whose samples go through `pipeline` (one of
// PipelineNames(); output images of `image_size` pixels for train and val).
// Throws UsageError if `source` is missing or holds no images, or the
// pipeline's output is larger than limits.max_pixels.
std::shared_ptr<const Dataset> OpenImageSource(const std::string& source,
                                               const std::string& pipeline, int image_size,
                                               const SourceLimits& limits = {});

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SOURCE_H_
