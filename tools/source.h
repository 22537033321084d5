// SOURCE, the data a subcommand reads: an image folder (ImageFolder layout,
// one subfolder per class) or a file list (one "path label" per line, the
// paths relative to the list file's folder).
// Opening it checks that it exists and holds images, and builds the image
// dataset for a pipeline.
//
// Thread safety: pure functions; the datasets are immutable.
#ifndef FEEDLINE_TOOLS_SOURCE_H_
#define FEEDLINE_TOOLS_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "feedline/dataset.h"

namespace feedline::cli {

enum class SourceKind { kFolder, kFileList };

// The pipelines `bench` and `tune` accept.
const std::vector<std::string>& PipelineNames();  // train, val, decode, read

// What `source` is. Throws UsageError if it does not exist or is neither a
// folder nor a regular file.
SourceKind CheckSource(const std::string& source);

// The dataset over `source` whose samples go through `pipeline` (one of
// PipelineNames(); output images of `image_size` pixels for train and val).
// Throws UsageError if `source` is missing or holds no images.
std::shared_ptr<const Dataset> OpenImageSource(const std::string& source,
                                               const std::string& pipeline, int image_size);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SOURCE_H_
