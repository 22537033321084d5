// The loop a forked worker process runs: read a WorkRequest, seed the Python
// generators, call dataset[index], write the sample's arrays into the shared
// arena (or a buffer sent after the metadata) with FillFields, as a thread
// worker would into its batch row, and reply with the metadata.
//
// The child ignores SIGINT (Ctrl-C is the parent's to handle), dies with its
// parent (PR_SET_PDEATHSIG, and end of file on its socket) and leaves with
// _exit: it never runs the parent's atexit handlers or destructors.
#ifndef FEEDLINE_PYTHON_WORKER_PROCESS_H_
#define FEEDLINE_PYTHON_WORKER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "python/python_support.h"

namespace feedline::python {

struct WorkerProcessConfig {
  int worker_id = 0;
  int num_workers = 1;
  uint64_t seed = 0;
  pid_t parent_pid = 0;
  int socket_fd = -1;  // the child's end
  int arena_fd = -1;   // -1: samples go through the socket
  std::shared_ptr<PyRef> dataset;
  std::shared_ptr<PyRef> worker_init_fn;  // may hold None
};

// Runs in the child right after the fork. REQUIRES: the GIL. Never returns.
[[noreturn]] void RunWorkerProcess(const WorkerProcessConfig& config);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_WORKER_PROCESS_H_
