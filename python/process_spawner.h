// ProcessSpawner: forks worker processes of a running, multi-threaded Python
// program from one dedicated thread.
//
// Why a thread of its own: a child's parent-death signal (PR_SET_PDEATHSIG)
// fires when the *thread* that forked it exits, and the loader's threads come
// and go between epochs; the spawner lives as long as the worker processes.
// Forks happen with the GIL held, between PyOS_BeforeFork and
// PyOS_AfterFork_Child/Parent (what os.fork does), so the interpreter's own
// locks are consistent in the child. The child then runs only the worker loop
// (Python and the arena); it never touches the engine, whose mutexes other
// threads may have held at the fork, and it leaves with _exit.
//
// The registry of inherited descriptors: every socket and arena descriptor
// the loaders create is registered, and a new child closes all registered
// descriptors but its own, so one worker never holds another's socket open
// (which would hide that worker's death from the parent).
//
// Thread safety: Spawn may be called from any thread; calls are serialized.
#ifndef FEEDLINE_PYTHON_PROCESS_SPAWNER_H_
#define FEEDLINE_PYTHON_PROCESS_SPAWNER_H_

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <thread>

namespace feedline::python {

class ProcessSpawner {
 public:
  ProcessSpawner();
  // Joins the thread. Kill the children first: they receive SIGKILL when it exits.
  ~ProcessSpawner();
  ProcessSpawner(const ProcessSpawner&) = delete;
  ProcessSpawner& operator=(const ProcessSpawner&) = delete;

  // Forks; in the child, `child_main` runs on the spawner thread with the GIL
  // held and must end the process (_exit). Returns the child's pid in the
  // parent. Throws Error if fork fails. REQUIRES: the caller does not hold
  // the GIL (the spawner takes it).
  pid_t Spawn(std::function<void()> child_main);

 private:
  struct Request;
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request*> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;           // GUARDED_BY(mu_)
  std::thread thread_;
};

// Descriptors a forked worker must not keep (see above).
void RegisterInheritedFd(int fd);
void UnregisterInheritedFd(int fd);
// In a freshly forked child: closes every registered descriptor except `keep`.
void CloseInheritedFdsExcept(std::initializer_list<int> keep);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PROCESS_SPAWNER_H_
