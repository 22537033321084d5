// NativeWorkerProgram is part of the extension surface
// (include/feedline/extension/native_worker.h, where it is declared and
// documented); the process layer names it from namespace internal.
#ifndef FEEDLINE_SRC_PROCESS_NATIVE_WORKER_H_
#define FEEDLINE_SRC_PROCESS_NATIVE_WORKER_H_

#include "feedline/extension/native_worker.h"
#include "src/process/worker_child.h"

namespace feedline::internal {

using extension::NativeWorkerProgram;

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_NATIVE_WORKER_H_
