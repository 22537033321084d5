// How a worker process ended, told so that a user can act on it: the signal
// or exit status, and whether the kernel's OOM killer acted meanwhile (the
// cgroup's memory.events oom_kill count, v1's memory.oom_control), instead
// of a guess.
//
// Thread safety: free functions; OomKillCounter is safe from any thread.
#ifndef FEEDLINE_SRC_PROCESS_WORKER_DEATH_H_
#define FEEDLINE_SRC_PROCESS_WORKER_DEATH_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace feedline::internal {

struct WorkerDeath {
  std::string how;  // "(pid 12) was killed by signal 9 (Killed)", "... exited with status 1"
  int64_t pid = -1;  // the process, where one was running
  int signal = 0;    // the signal that killed it; 0 if it exited or is not known
  bool killed_by_oom = false;
  int64_t oom_before = -1;  // the cgroup's OOM kill count at the previous check, -1 unreadable
  int64_t oom_after = -1;

  // `how` and what the OOM count says.
  std::string Describe() const;
};

// The cgroup's OOM kill count, remembered between deaths so each death is
// compared with the count at the previous one.
class OomKillCounter {
 public:
  OomKillCounter();
  // Fills the OOM part of `death` and remembers the count.
  void Check(WorkerDeath* death);

 private:
  std::atomic<int64_t> seen_;
};

// The kernel's count of OOM kills in this process's cgroup, or -1 where
// neither file is readable.
int64_t ReadOomKills();

// How a reaped process ended.
struct ProcessEnd {
  bool known = false;   // `status` is the process's (waitpid found it)
  int status = 0;
  bool killed = false;  // still running at the deadline: killed and reaped
};

// Reaps `pid`, waiting until `deadline` for it to exit by itself, then
// killing it (SIGKILL).
ProcessEnd ReapBy(pid_t pid, std::chrono::steady_clock::time_point deadline);

// "(pid N) was killed by signal 9 (Killed)" and the like.
std::string DescribeEnd(pid_t pid, const ProcessEnd& end);

// How worker process `pid`, reaped by ReapBy in this process, ended, as
// Python's multiprocessing says it: its exit status, or minus the signal
// that killed it; nullopt if this process did not reap it (or reaped it
// long ago: the most recent 4096 are kept). Thread-safe.
std::optional<int> ExitCodeOf(pid_t pid);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_DEATH_H_
