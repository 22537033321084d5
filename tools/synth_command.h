// `feedline synth DIR`: writes a photo-like synthetic JPEG dataset in
// ImageFolder layout, plus broken files of various kinds for testing error
// handling and `feedline verify`.
#ifndef FEEDLINE_TOOLS_SYNTH_COMMAND_H_
#define FEEDLINE_TOOLS_SYNTH_COMMAND_H_

#include <CLI/CLI.hpp>

#include "tools/command_line.h"

namespace feedline::cli {

Command AddSynthCommand(CLI::App& parent);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SYNTH_COMMAND_H_
