// The memory a run's batches take, checked before the loader starts: a
// --size or --batch far beyond the machine (--size 30000 is 691 GB per
// batch) is a usage error with the numbers, not an allocation failure in a
// loader thread.
//
// Thread safety: pure functions.
#ifndef FEEDLINE_TOOLS_BATCH_MEMORY_H_
#define FEEDLINE_TOOLS_BATCH_MEMORY_H_

#include <cstdint>

#include "feedline/dataset.h"
#include "feedline/loader_options.h"

namespace feedline::cli {

// Bytes of one batch of `batch_size` rows of the dataset's fixed fields
// (0 when it declares none); saturates at INT64_MAX.
int64_t BatchBytes(const Dataset& dataset, int64_t batch_size);

// Batches the loader keeps in memory at once: max(2, workers x prefetch);
// 2 when either is kAuto (the tuner starts there and keeps the rest within
// its memory budget).
int64_t BatchesInFlight(const LoaderOptions& options);

// Physical memory of the machine in bytes (0 if unknown).
int64_t PhysicalMemoryBytes();

// Throws UsageError naming --batch, --size, --workers and --prefetch when
// the batches in flight need more than `memory_bytes` (0: no check).
void CheckBatchMemory(const Dataset& dataset, const LoaderOptions& options, int64_t memory_bytes);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_BATCH_MEMORY_H_
