// Hooks into this test program's operator new (defined in allocation_test.cc):
// fault injection for allocation failure, and the bytes of batch storage
// alive. Every test file of tests/loader/ is linked into one program.
#ifndef FEEDLINE_TESTS_LOADER_ALLOCATION_HOOKS_H_
#define FEEDLINE_TESTS_LOADER_ALLOCATION_HOOKS_H_

#include <cstddef>
#include <cstdint>

namespace feedline::testing {

// Bytes of over-aligned blocks alive now: batch slot storage asks for
// 64-byte aligned blocks, nothing else in the loader does.
int64_t LiveAlignedBytes();

// From now on every allocation of at least `bytes` fails (operator new throws
// std::bad_alloc), as on a machine out of memory; 0 turns it off.
void FailAllocationsOfAtLeast(size_t bytes);

// Turns allocation failure on for its scope.
class FailingAllocations {
 public:
  explicit FailingAllocations(size_t bytes) { FailAllocationsOfAtLeast(bytes); }
  ~FailingAllocations() { FailAllocationsOfAtLeast(0); }
  FailingAllocations(const FailingAllocations&) = delete;
  FailingAllocations& operator=(const FailingAllocations&) = delete;
};

}  // namespace feedline::testing

#endif  // FEEDLINE_TESTS_LOADER_ALLOCATION_HOOKS_H_
