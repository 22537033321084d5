// The processes a test program has started and not yet reaped (zombies
// included), read from /proc as `ps` would: the children of every thread,
// since the loader forks its workers from its spawner thread.
#ifndef FEEDLINE_TESTS_PROCESS_CHILD_PROCESSES_H_
#define FEEDLINE_TESTS_PROCESS_CHILD_PROCESSES_H_

#include <dirent.h>
#include <signal.h>
#include <sys/types.h>

#include <fstream>
#include <set>
#include <string>

namespace feedline::testing {

inline std::set<pid_t> ChildProcesses() {
  std::set<pid_t> out;
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return out;
  while (dirent* task = ::readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + task->d_name + "/children");
    pid_t pid;
    while (in >> pid) out.insert(pid);
  }
  ::closedir(tasks);
  return out;
}

// Kills (SIGKILL) one child process not in *killed, and records it there.
// Returns false if every child is in *killed already.
inline bool KillOneLiveChild(std::set<pid_t>* killed) {
  std::set<pid_t> live = ChildProcesses();
  for (pid_t p : *killed) live.erase(p);
  if (live.empty()) return false;
  ::kill(*live.begin(), SIGKILL);
  killed->insert(*live.begin());
  return true;
}

}  // namespace feedline::testing

#endif  // FEEDLINE_TESTS_PROCESS_CHILD_PROCESSES_H_
