// Packed shards as a SOURCE of `feedline verify`: a folder written by
// `feedline pack`, a glob pattern of shards, or one .tar / .idx file.
#ifndef FEEDLINE_TOOLS_SHARD_SOURCE_H_
#define FEEDLINE_TOOLS_SHARD_SOURCE_H_

#include <memory>
#include <string>

#include "feedline/dataset.h"
#include "tools/source.h"

namespace feedline::cli {

// True if `source` names shards rather than an image folder or file list:
// a folder holding pack.txt or a shard index (*.idx), a path ending in .tar
// or .idx, or a pattern with * ? or [.
bool IsShardSource(const std::string& source);

// The shards of `source` with every image decoded whole (the pipeline of
// `verify`). Throws Error naming the file if an index or shard is missing
// or damaged.
std::shared_ptr<const Dataset> OpenShardSource(const std::string& source,
                                               const SourceLimits& limits);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SHARD_SOURCE_H_
