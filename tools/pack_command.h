// `feedline pack SOURCE OUT`: packs an image folder or file list into tar
// shards in the WebDataset layout, each with an index for random access
// (feedline/storage/pack.h). Resumes an interrupted pack into the same OUT.
#ifndef FEEDLINE_TOOLS_PACK_COMMAND_H_
#define FEEDLINE_TOOLS_PACK_COMMAND_H_

#include <CLI/CLI.hpp>

#include "tools/command_line.h"

namespace feedline::cli {

Command AddPackCommand(CLI::App& parent);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_PACK_COMMAND_H_
