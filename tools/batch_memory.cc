#include "tools/batch_memory.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "feedline/tensor.h"
#include "tools/command_line.h"

namespace feedline::cli {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// a * b, or kMax when it would overflow (both >= 0).
int64_t SaturatingMultiply(int64_t a, int64_t b) {
  if (a != 0 && b > kMax / a) return kMax;
  return a * b;
}

std::string Gigabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

}  // namespace

int64_t BatchBytes(const Dataset& dataset, int64_t batch_size) {
  int64_t row = 0;
  for (const FieldSpec& field : dataset.FixedFields()) {
    int64_t bytes = static_cast<int64_t>(DTypeSize(field.dtype));
    for (int64_t dim : field.shape) bytes = SaturatingMultiply(bytes, std::max<int64_t>(dim, 0));
    row = bytes > kMax - row ? kMax : row + bytes;
  }
  return SaturatingMultiply(row, batch_size);
}

int64_t BatchesInFlight(const LoaderOptions& options) {
  // "auto" starts at 2 slots and grows only within the tuner's memory budget.
  if (options.num_workers == kAuto || options.prefetch_factor == kAuto) return 2;
  return std::max<int64_t>(2, int64_t{options.num_workers} * options.prefetch_factor);
}

int64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return SaturatingMultiply(pages, page_size);
}

void CheckBatchMemory(const Dataset& dataset, const LoaderOptions& options, int64_t memory_bytes) {
  if (memory_bytes <= 0) return;
  const int64_t batch = BatchBytes(dataset, options.batch_size);
  const int64_t in_flight = BatchesInFlight(options);
  const int64_t needed = SaturatingMultiply(batch, in_flight);
  if (needed <= memory_bytes) return;
  throw UsageError("a batch of " + std::to_string(options.batch_size) + " samples takes " +
                   Gigabytes(batch) + " and " + std::to_string(in_flight) +
                   " batches are kept in flight: more than the " + Gigabytes(memory_bytes) +
                   " of memory of this machine; lower --size, --batch, --workers or --prefetch");
}

}  // namespace feedline::cli
