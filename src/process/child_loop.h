// The one loop a worker process runs, whatever its program: it makes the
// program's WorkerTask (feedline/extension/worker_task.h), starts it, and
// serves the parent's requests with it until the parent closes the channel:
// a map-style sample or several (kSample, kSamples), a stream's pass and
// its items (kOpen, kNext), a batch of the samples it kept (kCollate). It
// reads each request (worker_protocol.h), gives the task a TaskOutput over
// the requested batch row and the worker's arena (worker_child.h), and
// writes the reply: the task's fields, its failure as the task reports it,
// or the end of a pass. Tasks never see a message.
//
// Thread safety: runs on the forked child's only thread.
#ifndef FEEDLINE_SRC_PROCESS_CHILD_LOOP_H_
#define FEEDLINE_SRC_PROCESS_CHILD_LOOP_H_

#include "feedline/extension/worker_program.h"
#include "src/process/worker_child.h"

namespace feedline::internal {

// Right after the fork (and the program's AfterForkInChild): enters the
// child (EnterWorkerChild), runs the program's task until end of file on
// `channel`, and _exits. A task whose Start throws is reported to the
// parent as a failed start (ErrorCause::kWorkerInit), and the child exits 1.
[[noreturn]] void RunWorkerChild(const WorkerChannel& channel,
                                 extension::WorkerProgram& program);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_CHILD_LOOP_H_
