// Packed shards as a SOURCE: a folder written by `feedline pack`, a glob
// pattern of shards, or one .tar / .idx file; or the http(s):// URL of a
// served pack folder or shard (ShardDataset::Find).
//
// Thread safety: pure functions; the datasets are immutable.
#ifndef FEEDLINE_TOOLS_SHARD_SOURCE_H_
#define FEEDLINE_TOOLS_SHARD_SOURCE_H_

#include <memory>
#include <string>

#include "feedline/dataset.h"
#include "feedline/storage/remote_options.h"
#include "tools/source_limits.h"

namespace feedline::cli {

// True if `source` names shards rather than an image folder or file list:
// a folder holding pack.txt or a shard index (*.idx), a path ending in .tar
// or .idx, or a pattern with * ? or [ that names no existing file.
bool IsShardSource(const std::string& source);

// The shards of `source` with every image through `pipeline`: train or val
// at `image_size`, or decode (each image whole, the loader given its shape
// only: ShapesOnlyDataset). Throws UsageError for read (a record is read and
// decoded in one step) or a --size over limits.max_pixels, and Error naming
// the file if an index or shard is missing or damaged. `remote`: how a
// URL is read (its cache).
std::shared_ptr<const Dataset> OpenShardSource(const std::string& source,
                                               const std::string& pipeline, int image_size,
                                               const SourceLimits& limits,
                                               const storage::RemoteOptions& remote = {});

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SHARD_SOURCE_H_
