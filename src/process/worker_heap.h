// How a worker process's heap treats the large buffers a sample allocates
// and frees: kept for the next sample instead of given back to the kernel.
//
// Why: glibc maps every allocation over its mmap threshold (128 KiB at
// first, adapting up to 32 MiB) and unmaps it on free, and gives back freed
// memory at the top of the heap past 128 KiB. A sample's decoded image, a
// zoom-out canvas or a float tensor of several MB is then mapped, faulted in
// a page at a time, zeroed by the kernel and unmapped, for every sample:
// torchvision's detection reference with its ssd preset spends 3,200 page
// faults and 6.7 ms of system time per image that way, 15% of its time
// (measured 2026-12-07, bench/detection_python_vs_torch.py's data). A worker
// process runs the same kind of sample again and again, so it keeps what it
// freed: allocations up to kWorkerMmapThreshold come from the heap, and up
// to kWorkerTrimThreshold of free memory stays at its top. The child is
// forked from the spawner thread, so it allocates from that thread's arena,
// whose heaps are at most 64 MiB each and are unmapped once wholly free
// unless the top pad exceeds what unmapping would leave: kWorkerTopPad keeps
// them. A worker then holds its peak heap until it exits, as a caching
// allocator does.
//
// A user's own malloc settings win: with MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_ or a glibc.malloc tunable in GLIBC_TUNABLES in the
// environment, the heap is left as configured.
//
// Thread safety: call in the child before it runs any task (it is
// single-threaded there).
#ifndef FEEDLINE_SRC_PROCESS_WORKER_HEAP_H_
#define FEEDLINE_SRC_PROCESS_WORKER_HEAP_H_

#include <cstddef>

namespace feedline::internal {

inline constexpr size_t kWorkerMmapThreshold = size_t{256} << 20;
inline constexpr size_t kWorkerTrimThreshold = size_t{256} << 20;
inline constexpr size_t kWorkerTopPad = size_t{64} << 20;

// Whether the environment configures glibc's malloc itself.
bool UserConfiguresMalloc();

// Sets the thresholds above unless UserConfiguresMalloc(); true if it did.
bool KeepFreedMemoryForNextSample();

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_HEAP_H_
