#include "src/process/worker_death.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace feedline::internal {
namespace {

// The exit codes of reaped workers, newest last (ExitCodeOf).
constexpr size_t kKeptExitCodes = 4096;
std::mutex exit_codes_mu;
std::deque<std::pair<pid_t, int>> exit_codes;  // guarded by exit_codes_mu

void RecordExitCode(pid_t pid, const ProcessEnd& end) {
  if (!end.known) return;
  const int code = WIFSIGNALED(end.status) ? -WTERMSIG(end.status)
                   : WIFEXITED(end.status) ? WEXITSTATUS(end.status)
                                           : 0;
  std::lock_guard<std::mutex> lock(exit_codes_mu);
  exit_codes.emplace_back(pid, code);
  if (exit_codes.size() > kKeptExitCodes) exit_codes.pop_front();
}

std::string SignalName(int sig) {
  const char* name = ::strsignal(sig);
  return "signal " + std::to_string(sig) + (name != nullptr ? std::string(" (") + name + ")" : "");
}

}  // namespace

int64_t ReadOomKills() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    std::ifstream cgroup("/proc/self/cgroup");
    std::string line;
    while (std::getline(cgroup, line)) {
      if (line.rfind("0::", 0) == 0) {
        std::string dir = line.substr(3);
        if (dir != "/") out.push_back("/sys/fs/cgroup" + dir + "/memory.events");
      }
    }
    out.push_back("/sys/fs/cgroup/memory.events");
    out.push_back("/sys/fs/cgroup/memory/memory.oom_control");
    return out;
  }();
  for (const std::string& path : paths) {
    std::ifstream in(path);
    std::string key;
    int64_t value;
    while (in >> key >> value) {
      if (key == "oom_kill") return value;
    }
  }
  return -1;
}

OomKillCounter::OomKillCounter() : seen_(ReadOomKills()) {}

void OomKillCounter::Check(WorkerDeath* death) {
  const int64_t after = ReadOomKills();
  death->oom_before = seen_.exchange(after);
  death->oom_after = after;
  death->killed_by_oom = after >= 0 && death->oom_before >= 0 && after > death->oom_before;
}

ProcessEnd ReapBy(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  ProcessEnd end;
  pid_t done;
  while ((done = ::waitpid(pid, &end.status, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      done = ::waitpid(pid, &end.status, 0);
      end.killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  end.known = done == pid;
  RecordExitCode(pid, end);
  return end;
}

std::string DescribeEnd(pid_t pid, const ProcessEnd& end) {
  std::string how = "ended";
  if (end.killed) {
    how = "stopped answering and was killed";  // closed its socket but lived on
  } else if (end.known && WIFSIGNALED(end.status)) {
    how = "was killed by " + SignalName(WTERMSIG(end.status));
  } else if (end.known && WIFEXITED(end.status)) {
    how = "exited with status " + std::to_string(WEXITSTATUS(end.status));
  }
  return "(pid " + std::to_string(pid) + ") " + how;
}

}  // namespace feedline::internal

namespace feedline::extension {

std::string WorkerDeath::Describe() const {
  std::string out = how;
  if (oom_after < 0) {
    out += "; the cgroup's OOM kill count is not readable here";
  } else if (killed_by_oom) {
    out += "; the kernel's OOM killer acted meanwhile (cgroup memory.events oom_kill " +
           std::to_string(oom_before) + " -> " + std::to_string(oom_after) +
           "): the worker probably ran out of memory";
  } else {
    out += "; not the OOM killer (cgroup oom_kill count unchanged)";
  }
  return out;
}

std::optional<int> ExitCodeOf(pid_t pid) {
  std::lock_guard<std::mutex> lock(internal::exit_codes_mu);
  for (auto it = internal::exit_codes.rbegin(); it != internal::exit_codes.rend(); ++it) {
    if (it->first == pid) return it->second;
  }
  return std::nullopt;
}

}  // namespace feedline::extension
