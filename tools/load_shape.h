// How `bench` and `tune` load SOURCE: the pipeline each sample goes through,
// the batch, the output size, the seed and a simulated training step; the
// options both take, with one help text each.
//
// Thread safety: plain values and pure functions; AddLoadShapeOptions
// configures an App before parsing, from one thread.
#ifndef FEEDLINE_TOOLS_LOAD_SHAPE_H_
#define FEEDLINE_TOOLS_LOAD_SHAPE_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "feedline/vision/pipeline.h"

namespace feedline::cli {

// The pipelines `bench` and `tune` accept: train, val, decode, read.
const std::vector<std::string>& PipelineNames();

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

// The image pipeline that `pipeline` names: train and val, torchvision's
// recipes at `image_size` (f32 CHW); decode, the whole image decoded to u8
// HWC and nothing else. Throws UsageError for another name ("read" decodes
// nothing) or when train or val would make images over `max_pixels` pixels.
vision::Pipeline ImagePipeline(const std::string& pipeline, int image_size, int64_t max_pixels);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_LOAD_SHAPE_H_
