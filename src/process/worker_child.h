// The child's side of a worker process is part of the extension surface
// (include/feedline/extension/worker_child.h, where it is declared and
// documented); the process layer names it from namespace internal.
#ifndef FEEDLINE_SRC_PROCESS_WORKER_CHILD_H_
#define FEEDLINE_SRC_PROCESS_WORKER_CHILD_H_

#include "feedline/extension/worker_child.h"
#include "src/process/worker_protocol.h"

namespace feedline::internal {

using namespace ::feedline::extension;  // NOLINT(build/namespaces): one surface, two names

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_CHILD_H_
