// Helpers for the end-to-end tests: run the built `feedline` binary with
// arguments and capture its exit code, stdout and stderr; make and remove a
// scratch folder.
#ifndef FEEDLINE_TESTS_TOOLS_RUN_FEEDLINE_H_
#define FEEDLINE_TESTS_TOOLS_RUN_FEEDLINE_H_

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "feedline/synth/synth.h"

extern char** environ;

namespace feedline::cli::testing {

#ifdef FEEDLINE_CLI_PATH
inline constexpr const char* kFeedlineBinary = FEEDLINE_CLI_PATH;
#else
inline constexpr const char* kFeedlineBinary = FEEDLINE_BINARY_DIR "/tools/feedline";
#endif

struct RunResult {
  int exit_code = -1;      // -1 if the program did not exit normally
  int signal = 0;          // the signal that ended it, if one did
  bool timed_out = false;  // killed after the time limit
  std::string out;
  std::string err;

  // The lines of `text` without their newlines.
  static std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  // The last line of stdout parsed as JSON (throws if it is not JSON).
  nlohmann::json Json() const {
    std::vector<std::string> lines = Lines(out);
    return nlohmann::json::parse(lines.empty() ? std::string() : lines.back());
  }
};

inline std::string ReadWhole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh folder under the system's temporary folder, removed by the
// destructor.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "feedline_cli_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Runs `feedline args...` with stdout and stderr sent to files (so neither
// can fill a pipe and block), and returns what it wrote. A run that takes
// longer than `timeout_s` seconds is killed (timed_out is set), so a command
// that hangs fails its test instead of stopping the suite.
inline RunResult RunFeedline(const std::vector<std::string>& args, double timeout_s = 60) {
  ScratchDir io;
  const std::string out_path = io / "stdout";
  const std::string err_path = io / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  std::vector<std::string> argv_strings = {kFeedlineBinary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  RunResult result;
  pid_t pid;
  if (posix_spawn(&pid, kFeedlineBinary, &actions, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    result.err = std::string("cannot start ") + kFeedlineBinary;
    return result;
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() > deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = ReadWhole(out_path);
  result.err = ReadWhole(err_path);
  return result;
}

// Writes a small synthetic ImageFolder (4 classes) into `dir` and returns
// the paths of its `broken` broken files.
inline std::vector<std::string> MakeImageFolder(const std::string& dir, int64_t images,
                                                int64_t broken = 0, uint64_t seed = 1) {
  return vision::WriteSyntheticImageFolder(dir, images, /*classes=*/4, seed, broken);
}

// The paths of the image files under `dir`, relative to it, sorted.
inline std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file())
      files.push_back(std::filesystem::relative(entry.path(), dir).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace feedline::cli::testing

#endif  // FEEDLINE_TESTS_TOOLS_RUN_FEEDLINE_H_
