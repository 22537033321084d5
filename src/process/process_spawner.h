// ProcessSpawner: forks worker processes of a running, multi-threaded program
// from one dedicated thread.
//
// Why a thread of its own: a child's parent-death signal (PR_SET_PDEATHSIG)
// fires when the *thread* that forked it exits, and the loader's threads come
// and go between epochs; the spawner lives as long as the worker processes.
// The fork runs between the ForkHooks (a Python loader takes the GIL and
// calls PyOS_BeforeFork / PyOS_AfterFork_Child / _Parent there, as os.fork
// does). The child then runs only `child_main` (the dataset and the worker
// protocol); it never touches the engine, whose mutexes other threads may
// have held at the fork, and it leaves with _exit.
//
// The registry of inherited descriptors (src/core/inherited_fds.h) is held
// across the fork, so that a new child closes all registered descriptors but
// its own: one worker never holds another's socket open (which would hide
// that worker's death from the parent), nor a shard being downloaded.
//
// Thread safety: Spawn may be called from any thread; calls are serialized.
#ifndef FEEDLINE_SRC_PROCESS_PROCESS_SPAWNER_H_
#define FEEDLINE_SRC_PROCESS_PROCESS_SPAWNER_H_

#include <sys/types.h>

#include <deque>
#include <functional>
#include <thread>

#include "feedline/extension/worker_program.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"

namespace feedline::internal {

// ForkHooks: feedline/extension/worker_program.h.
using extension::ForkHooks;

class ProcessSpawner {
 public:
  // `hooks` may be null; else it must outlive the spawner.
  explicit ProcessSpawner(ForkHooks* hooks);
  // Joins the thread. Kill the children first: they receive SIGKILL when it exits.
  ~ProcessSpawner();
  ProcessSpawner(const ProcessSpawner&) = delete;
  ProcessSpawner& operator=(const ProcessSpawner&) = delete;

  // Forks; in the child, `child_main` runs on the spawner thread (after
  // AfterForkInChild) and must end the process (_exit; returning _exits with
  // status 0). Returns the child's pid in the parent. Throws Error if fork
  // fails.
  pid_t Spawn(std::function<void()> child_main);

 private:
  struct Request;
  void Run();

  ForkHooks* hooks_;
  Mutex mu_;
  CondVar cv_;
  std::deque<Request*> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_PROCESS_SPAWNER_H_
