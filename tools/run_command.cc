// The `feedline` command (tools/run_command.h): its subcommands, its parse
// errors and its last-resort error handling.
#include "tools/run_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "tools/bench_command.h"
#include "tools/command_line.h"
#include "tools/pack_command.h"
#include "tools/synth_command.h"
#include "tools/tune_command.h"
#include "tools/verify_command.h"

namespace feedline::cli {
namespace {

// The command's name for messages printed where no App is at hand.
const char* g_command_name = "feedline";

// The last resort for an exception that escapes a thread the command does
// not run itself (a loader worker): one line and exit code 1 instead of
// "terminate called after throwing ..." and an abort with a core dump.
[[noreturn]] void OnTerminate() {
  std::string what = "an unknown error";
  if (std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::bad_alloc&) {
      what = "out of memory (std::bad_alloc)";
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
  }
  std::fprintf(stderr, "%s: error: %s\n", g_command_name, what.c_str());
  std::fflush(stderr);
  ::_exit(kExitFailure);
}

std::string CommandName(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return "feedline " + sub->get_name();
  return "feedline";
}

int Main(int argc, char** argv, const std::string& version) {
  CLI::App app("Measure, tune and check data loading for training.", "feedline");
  app.require_subcommand(1);
  app.set_version_flag("--version", "feedline " + version);
  std::vector<Command> commands = {AddBenchCommand(app), AddTuneCommand(app), AddVerifyCommand(app),
                                   AddSynthCommand(app), AddPackCommand(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      std::vector<std::string> names;
      for (const Command& command : commands) names.push_back(command.app->get_name());
      std::fprintf(stderr, "%s\n", UnknownCommandLine(argv[1], names).c_str());
      return kExitUsage;
    }
    std::fprintf(stderr, "%s\n", ParseErrorLine(CommandName(app), e).c_str());
    return kExitUsage;
  }

  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    const std::string name = "feedline " + command.app->get_name();
    static std::string terminate_name;
    terminate_name = name;
    g_command_name = terminate_name.c_str();
    try {
      return command.run();
    } catch (const UsageError& e) {
      std::fprintf(stderr, "%s: error: %s (see '%s --help')\n", name.c_str(), e.what(),
                   name.c_str());
      return kExitUsage;
    } catch (const SampleError& e) {
      // Only error policy raise lets a broken sample end the run.
      std::fprintf(stderr,
                   "%s: error: %s (--error-policy skip or replace goes on past broken samples)\n",
                   name.c_str(), e.what());
      return kExitFailure;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "%s: error: out of memory (std::bad_alloc)\n", name.c_str());
      return kExitFailure;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: error: %s\n", name.c_str(), e.what());
      return kExitFailure;
    } catch (...) {
      std::fprintf(stderr, "%s: error: an unknown error\n", name.c_str());
      return kExitFailure;
    }
  }
  return kExitUsage;  // unreachable: require_subcommand(1)
}

}  // namespace

int RunCommand(const std::vector<std::string>& args, const std::string& version) {
  // CLI11 parses a C command line; args outlives it.
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::terminate_handler previous = std::set_terminate(OnTerminate);
  const int code = Main(static_cast<int>(args.size()), argv.data(), version);
  std::set_terminate(previous);
  // Before the caller writes anything itself (Python's own buffers).
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace feedline::cli

