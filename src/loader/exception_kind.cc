#include "src/loader/exception_kind.h"

#include <cxxabi.h>

#include <new>

namespace feedline::internal {

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
