// Extension surface (docs/architecture.md, "Extension surface"): what a
// worker process reports when a request fails, and how the parent raises it
// (WorkerProgram::RaiseError, worker_program.h). A WorkerTask's Failure
// (worker_task.h) turns the exception in flight into one. It may change
// with any version of the library.
#ifndef FEEDLINE_EXTENSION_WORKER_FAILURE_H_
#define FEEDLINE_EXTENSION_WORKER_FAILURE_H_

#include <cstdint>
#include <string>

#include "feedline/error.h"
#include "feedline/export.h"
#include "feedline/failure_kind.h"

namespace feedline::extension {

// What an ErrorReply reports.
enum class ErrorCause : uint8_t {
  kSample = 0,      // the sample failed: a SampleError of `kind`, with `origin`
  kWorkerInit = 1,  // the task's Start failed (the start handshake's answer)
  // Something that must not become a sample error (a Python exception that
  // is not an Exception, out of memory): the parent raises it again as
  // itself, the type named by origin.exception_type ("KeyboardInterrupt",
  // "SystemExit", kBadAllocType).
  kInterrupt = 2,
};

// origin.exception_type of a kInterrupt reply for std::bad_alloc.
inline constexpr char kBadAllocType[] = "std::bad_alloc";

struct ErrorReply {
  ErrorCause cause = ErrorCause::kSample;
  FailureKind kind = FailureKind::kException;
  std::string message;
  std::string source;    // the SampleError's source, if it named one
  FailureOrigin origin;  // exception_type crosses; worker_pid and signal are the parent's to know
};

// For a SampleError (kind, message, source and origin kept), for anything
// else a sample's code threw (kException), for a failed start, and for what
// the parent must raise again as itself.
FEEDLINE_EXPORT ErrorReply SampleErrorReply(const SampleError& error);
FEEDLINE_EXPORT ErrorReply ExceptionReply(std::string message, std::string exception_type = std::string());
FEEDLINE_EXPORT ErrorReply WorkerInitReply(std::string message);
FEEDLINE_EXPORT ErrorReply InterruptReply(std::string exception_type, std::string message);

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_WORKER_FAILURE_H_
