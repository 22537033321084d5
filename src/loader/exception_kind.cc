#include "src/loader/exception_kind.h"

#include <cxxabi.h>

#include <new>

namespace feedline::internal {

// A thread's cancellation unwinds with abi::__forced_unwind, which has no
// exception object: its handler binds a reference to null. That binding is
// how glibc's own documentation catches it, and it is never read, so the
// null-reference check of -fsanitize=undefined is off in this one function.
__attribute__((no_sanitize("null")))
CaughtException SortCurrentException() {
  // Rethrown, not copied: each handler below sees the object the caller's
  // handler holds, which outlives this call.
  try {
    throw;
  } catch (const abi::__forced_unwind&) {
    throw;
  } catch (const std::bad_alloc& e) {
    return {ExceptionKind::kOutOfMemory, &e};
  } catch (const SampleError& e) {
    return {ExceptionKind::kSampleError, &e};
  } catch (const std::exception& e) {
    return {ExceptionKind::kException, &e};
  } catch (...) {
    return {ExceptionKind::kInterrupt, nullptr};
  }
}

void RethrowIfCancellation() { SortCurrentException(); }

}  // namespace feedline::internal
