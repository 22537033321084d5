// Extension surface (docs/architecture.md, "Extension surface"): how a
// worker process ended, told so that a user can act on it: the signal or
// exit status, and whether the kernel's OOM killer acted meanwhile (the
// cgroup's memory.events oom_kill count, v1's memory.oom_control), instead
// of a guess. The library's worker processes (src/process/) diagnose every
// death; a WorkerProgram receives one (RaiseStreamDeath, worker_program.h),
// and the Python binding reads a reaped worker's exit code (ExitCodeOf) for
// multiprocessing's `exitcode`. It may change with any version of the
// library.
//
// Thread safety: a plain value; ExitCodeOf is safe from any thread.
#ifndef FEEDLINE_EXTENSION_WORKER_DEATH_H_
#define FEEDLINE_EXTENSION_WORKER_DEATH_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "feedline/export.h"

namespace feedline::extension {

struct FEEDLINE_EXPORT WorkerDeath {
  std::string how;  // "(pid 12) was killed by signal 9 (Killed)", "... exited with status 1"
  int64_t pid = -1;  // the process, where one was running
  int signal = 0;    // the signal that killed it; 0 if it exited or is not known
  bool killed_by_oom = false;
  int64_t oom_before = -1;  // the cgroup's OOM kill count at the previous check, -1 unreadable
  int64_t oom_after = -1;

  // `how` and what the OOM count says.
  std::string Describe() const;
};

// How worker process `pid`, reaped by the library's worker processes in
// this process, ended, as Python's multiprocessing says it: its exit
// status, or minus the signal that killed it; nullopt if this process did
// not reap it (or reaped it long ago: the most recent 4096 are kept).
FEEDLINE_EXPORT std::optional<int> ExitCodeOf(pid_t pid);

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_WORKER_DEATH_H_
