// SOURCE, the data `bench`, `tune` and `verify` read, in every form the
// library reads: an image folder, a file list (tools/image_source.h), packed
// shards (a folder, a glob pattern, one .tar or .idx: tools/shard_source.h),
// an HDF5 file ("FILE.h5:DATASET" and --fields: tools/hdf5_source.h) or
// detection data in COCO's, VOC's or YOLO's layout
// (tools/detection_source.h).
// The three commands parse and open it here, so they accept the same
// sources with the same messages.
//
// Thread safety: pure functions; AddSourceOptions configures an App before
// parsing, from one thread.
#ifndef FEEDLINE_TOOLS_SOURCE_H_
#define FEEDLINE_TOOLS_SOURCE_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/storage/remote_options.h"
#include "tools/detection_source.h"
#include "tools/hdf5_source.h"
#include "tools/source_limits.h"

namespace feedline::cli {

enum class SourceKind { kFolder, kFileList, kShards, kHDF5, kCoco, kVoc, kYolo };

// "folder", "file_list", "shards", "hdf5", "coco", "voc", "yolo": the JSON
// reports' source_kind.
const char* SourceKindName(SourceKind kind);

// The command line that names a SOURCE and how to read it.
struct SourceArgs {
  std::string source;
  std::vector<std::string> fields;  // --fields, for an HDF5 file
  SourceLimits limits;
  // --cache-dir, --cache-limit: the node's shard cache, for a remote SOURCE
  // (RemoteOptions::cache_dir, cache_limit).
  std::string cache_dir;
  int64_t cache_limit = 0;
};

// Adds the positional SOURCE, --fields, --max-file-bytes, --max-pixels,
// --cache-dir and --cache-limit, bound to `args`. Returns SOURCE.
CLI::Option* AddSourceOptions(CLI::App* app, SourceArgs& args);

struct ParsedSource {
  SourceKind kind = SourceKind::kFolder;
  std::string path;  // SOURCE as given; for an HDF5 file, the file
  HDF5Source hdf5;   // kHDF5: the file and its fields
  DetectionSource detection;  // kCoco, kVoc, kYolo: where its images and objects are
  storage::RemoteOptions remote;  // a URL: how it is read (--cache-dir, --cache-limit)
};

// What SOURCE is. Throws UsageError naming SOURCE when it is empty, does not
// exist, is an empty folder or file, or is none of the sources above (an
// image, a binary file, a FIFO), and naming --fields when it is given for
// another source than an HDF5 file or is malformed, and naming --cache-dir
// or --cache-limit when given for a local SOURCE.
ParsedSource ParseSource(const SourceArgs& args);

// The dataset over `source` whose images go through `pipeline` (one of
// PipelineNames(); train and val output images of `image_size` pixels).
// Throws UsageError for what the command line named wrongly (a source
// without images, a missing HDF5 dataset, a --size over --max-pixels, read
// on shards), and Error naming the file for damaged shards.
std::shared_ptr<const Dataset> OpenSource(const ParsedSource& source, const std::string& pipeline,
                                          int image_size, const SourceLimits& limits);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SOURCE_H_
