// Pieces shared by the subcommands of `feedline`: exit codes, the usage
// error, CLI11 validators whose messages say what is allowed, and the CPU
// count that `--workers auto` and the diagnosis use.
//
// Thread safety: pure functions; validators are values.
#ifndef FEEDLINE_TOOLS_COMMAND_LINE_H_
#define FEEDLINE_TOOLS_COMMAND_LINE_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace feedline::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the run failed, or verify found broken files
inline constexpr int kExitUsage = 2;    // bad command line, missing or empty SOURCE

// A bad command line found after parsing (a SOURCE that does not exist, an
// empty folder). main() prints it on one line and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// A subcommand: its CLI11 app and what runs when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The positional SOURCE every image command takes (an image folder or a file
// list), bound to `source`.
CLI::Option* AddSourceArgument(CLI::App* app, std::string& source);

// --json (end stdout with the results as one JSON object) and --quiet (no
// progress on stderr), as every long-running subcommand takes them.
void AddOutputFlags(CLI::App* app, bool& json, bool& quiet);

// Validators. Each message names what is allowed and what was given; CLI11
// puts the option's name in front.
CLI::Validator IntAtLeast(long long min);
CLI::Validator NumberAtLeast(double min);
CLI::Validator OneOf(std::vector<std::string> choices);
// An integer >= 0 or "auto".
CLI::Validator WorkersValue();

// CPUs this process may run on (sched_getaffinity), at least 1.
int CpuCount();

// The number of workers for a --workers value: "auto" is one per CPU.
// REQUIRES: `value` passed WorkersValue().
int ParseWorkers(const std::string& value);

// The one-line message for a CLI11 parse error of `command` ("feedline bench").
std::string ParseErrorLine(const std::string& command, const CLI::ParseError& error);

// The one-line message for a first argument that names no subcommand.
std::string UnknownCommandLine(const std::string& name, const std::vector<std::string>& commands);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_COMMAND_LINE_H_
