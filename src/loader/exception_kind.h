// SortCurrentException: what the exception being handled is, so that each of
// the loader's handlers (a sample, a stream item, collate, worker_init, a
// worker's task) decides in one switch what it becomes, and all of them sort
// alike: out of memory is never a bad sample, a SampleError keeps its own
// reason, any other std::exception is an ordinary failure, and what is not a
// std::exception (Python's KeyboardInterrupt and SystemExit, passed through
// the binding as they are) ends the epoch.
//
// Thread cancellation is not sorted: glibc's pthread_cancel unwinds the
// thread with abi::__forced_unwind, which a handler must rethrow (glibc
// aborts otherwise), so both functions rethrow it out of the caller's
// handler. Code that must run on every way out runs before the call.
//
// Thread safety: each call concerns the calling thread's exception only.
//
// Example:
//   try {
//     dataset->Get(index, sample, ctx);
//   } catch (...) {
//     const CaughtException caught = SortCurrentException();
//     switch (caught.kind) {
//       case ExceptionKind::kOutOfMemory: ...; break;
//       case ExceptionKind::kSampleError: Report(caught.sample_error()); break;
//       case ExceptionKind::kException: Report(caught.exception->what()); break;
//       case ExceptionKind::kInterrupt: Interrupt(std::current_exception()); break;
//     }
//   }
#ifndef FEEDLINE_SRC_LOADER_EXCEPTION_KIND_H_
#define FEEDLINE_SRC_LOADER_EXCEPTION_KIND_H_

#include <exception>

#include "feedline/error.h"

namespace feedline::internal {

enum class ExceptionKind {
  kOutOfMemory,  // std::bad_alloc
  kSampleError,  // SampleError (TimeoutError among them)
  kException,    // any other std::exception
  kInterrupt,    // not a std::exception
};

struct CaughtException {
  ExceptionKind kind;
  // The exception object itself, alive until the handler that sorted it
  // ends; null for kInterrupt.
  const std::exception* exception = nullptr;

  // For kSampleError only.
  const SampleError& sample_error() const { return static_cast<const SampleError&>(*exception); }
};

// Call only inside a catch handler. Rethrows a thread cancellation.
CaughtException SortCurrentException();

// Call only inside a catch handler: for one that treats every exception
// alike but must let a thread cancellation through.
void RethrowIfCancellation();

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_EXCEPTION_KIND_H_
