// The worker protocol's messages are part of the extension surface
// (include/feedline/extension/worker_protocol.h, where they are declared and
// documented); the process layer names them from namespace internal.
#ifndef FEEDLINE_SRC_PROCESS_WORKER_PROTOCOL_H_
#define FEEDLINE_SRC_PROCESS_WORKER_PROTOCOL_H_

#include "feedline/extension/worker_protocol.h"

namespace feedline::internal {

using namespace ::feedline::extension;  // NOLINT(build/namespaces): one surface, two names

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_PROTOCOL_H_
