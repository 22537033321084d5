// The whole `feedline` command: parse a command line, run the subcommand it
// names, print its errors. Called by the executable's main() (tools/main.cc)
// and by the Python package's entry point through feedline._feedline
// (python/command_module.cc), so that `pip install` users run the same code
// without an executable in the wheel.
//
// Thread safety: runs one command at a time per process; while it runs, a
// terminate handler that prints one line and exits with kExitFailure is in
// place (the one before is restored on return).
#ifndef FEEDLINE_TOOLS_RUN_COMMAND_H_
#define FEEDLINE_TOOLS_RUN_COMMAND_H_

#include <string>
#include <vector>

namespace feedline::cli {

// Runs `feedline ARGS...` where args[0] is the program's name, and returns the
// exit code (command_line.h: kExitOk, kExitFailure, kExitUsage). Output goes
// to the process's stdout and stderr, flushed before the return. `version` is
// what --version prints after "feedline ".
int RunCommand(const std::vector<std::string>& args, const std::string& version);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_RUN_COMMAND_H_
