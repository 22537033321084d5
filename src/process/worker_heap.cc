#include "src/process/worker_heap.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace feedline::internal {

bool UserConfiguresMalloc() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) return true;
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr;
}

bool KeepFreedMemoryForNextSample() {
  if (UserConfiguresMalloc()) return false;
  // Setting either threshold also turns off glibc's adaptive threshold,
  // which would otherwise move it back after the first large free.
  const bool mmap_set = ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(kWorkerMmapThreshold)) == 1;
  const bool trim_set = ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(kWorkerTrimThreshold)) == 1;
  const bool pad_set = ::mallopt(M_TOP_PAD, static_cast<int>(kWorkerTopPad)) == 1;
  return mmap_set && trim_set && pad_set;
}

}  // namespace feedline::internal
