// Image files as a SOURCE: an image folder (ImageFolder layout, one
// subfolder per class) or a file list (one "path label" per line, the paths
// relative to the list file's folder). `pack` takes these only; `bench`,
// `tune` and `verify` take them among the sources of tools/source.h.
//
// Thread safety: pure functions; the datasets are immutable.
#ifndef FEEDLINE_TOOLS_IMAGE_SOURCE_H_
#define FEEDLINE_TOOLS_IMAGE_SOURCE_H_

#include <memory>
#include <string>
#include <string_view>

#include "feedline/dataset.h"
#include "tools/source_limits.h"

namespace feedline::cli {

enum class ImageSourceKind { kFolder, kFileList };

// What the commands that take image files only accept, for messages.
inline constexpr std::string_view kFolderOrFileList = "a folder or a file list";

// What `source` is. Throws UsageError if it does not exist, is an empty
// folder or file, is neither a folder nor a regular file, or is a file that
// cannot be a file list (an image, a binary file); the message says that
// SOURCE is not `expected` (what the command accepts).
ImageSourceKind CheckImageSource(const std::string& source,
                                 std::string_view expected = kFolderOrFileList);

// The dataset over `source` (of `kind`) whose samples go through `pipeline`
// (one of PipelineNames(); output images of `image_size` pixels for train
// and val). read and decode give each file's size or decoded height and
// width (RawImageDataset). Throws UsageError if `source` holds no images or
// a bad list line, or the pipeline's output is larger than limits.max_pixels.
std::shared_ptr<const Dataset> OpenImageSource(const std::string& source, ImageSourceKind kind,
                                               const std::string& pipeline, int image_size,
                                               const SourceLimits& limits);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_IMAGE_SOURCE_H_
