// The diagnosis of a worker process's death (WorkerDeath,
// feedline/extension/worker_death.h): reaping it, the cgroup's OOM kill
// count before and after.
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

#include "feedline/extension/worker_death.h"

namespace feedline::internal {

// WorkerDeath and ExitCodeOf are the extension surface's
// (feedline/extension/worker_death.h); the rest is the process layer's own.
using namespace ::feedline::extension;  // NOLINT(build/namespaces): one surface, two names

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

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_DEATH_H_
