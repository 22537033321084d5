#include "src/process/process_spawner.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "feedline/error.h"
#include "src/core/inherited_fds.h"

namespace feedline::internal {

struct ProcessSpawner::Request {
  std::function<void()> child_main;
  pid_t pid = -1;
  int error = 0;
  bool done = false;
};

ProcessSpawner::ProcessSpawner(ForkHooks* hooks) : hooks_(hooks), thread_([this] { Run(); }) {}

ProcessSpawner::~ProcessSpawner() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

pid_t ProcessSpawner::Spawn(std::function<void()> child_main) {
  Request request;
  request.child_main = std::move(child_main);
  MutexLock lock(&mu_);
  if (stop_) throw Error("the worker process spawner is stopped");
  queue_.push_back(&request);
  cv_.NotifyAll();
  while (!request.done) cv_.Wait(&mu_);
  if (request.pid < 0) {
    throw Error(std::string("fork failed: ") + std::strerror(request.error));
  }
  return request.pid;
}

void ProcessSpawner::Run() {
  MutexLock lock(&mu_);
  while (true) {
    while (!stop_ && queue_.empty()) cv_.Wait(&mu_);
    if (queue_.empty()) return;  // stop_ and nothing left to do
    Request* request = queue_.front();
    queue_.pop_front();
    pid_t pid;
    int error = 0;
    {
      // The hooks and the fork run without the spawner's lock, so that a hook
      // waiting for the GIL never waits for a thread that holds the GIL and
      // calls Spawn.
      MutexUnlock unlocked(&mu_);
      {
        if (hooks_ != nullptr) hooks_->BeforeFork();
        {
          // The registry is locked across the fork, so the child's copy of it
          // is complete; both processes unlock it right after (the child's
          // own downloads register theirs).
          const InheritedFdsForkLock registry;
          pid = ::fork();
          error = errno;
        }
        if (pid == 0) {
          // Nothing may unwind out of here into the parent's copy of this thread.
          try {
            if (hooks_ != nullptr) hooks_->AfterForkInChild();
            request->child_main();
          } catch (...) {
            _exit(1);
          }
          _exit(0);
        }
      }
      if (hooks_ != nullptr) hooks_->AfterForkInParent();
    }
    request->pid = pid;
    request->error = error;
    request->done = true;
    cv_.NotifyAll();
  }
}

}  // namespace feedline::internal
