// FailureKind: why a sample could not be produced. Every SampleError has one;
// the error policy counts failures by it (StatsSnapshot::errors_by_reason,
// keyed by FailureKindName), the worker-process protocol carries it as a
// number, and the Python front ends read it as the error's `reason`.
//
// Thread safety: plain values and a function of them.
#ifndef FEEDLINE_FAILURE_KIND_H_
#define FEEDLINE_FAILURE_KIND_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "feedline/export.h"

namespace feedline {

enum class FailureKind : uint8_t {
  kIo = 0,          // a file or record could not be read
  kFormat = 1,      // the bytes are no image or record of a known format
  kDecode = 2,      // a known format, but corrupt
  kChecksum = 3,    // a record's CRC does not match its index
  kTooLarge = 4,    // past a configured limit (pixels, bytes)
  kShape = 5,       // a transform cannot apply to the sample's shape
  kType = 6,        // a field of a type the loader cannot carry
  kSchema = 7,      // a field's dtype or shape differs from its batch's
  kException = 8,   // the dataset's own code raised (its type: FailureOrigin)
  kCollate = 9,     // collate_fn raised or returned what cannot be a batch
  kMemory = 10,     // a worker's shared memory could not grow
  kTimeout = 11,    // longer than LoaderOptions::timeout
  kWorkerDied = 12, // the worker process loading it died (FailureOrigin: pid, signal)
  kCancelled = 13,  // the loader abandoned it (closing, a new epoch)
};

inline constexpr int kFailureKindCount = 14;

// The kind's name: "io", "format", "decode", "checksum", "too_large",
// "shape", "type", "schema", "exception", "collate", "memory", "timeout",
// "worker died", "cancelled".
FEEDLINE_EXPORT const char* FailureKindName(FailureKind kind);
// The kind named `name` (FailureKindName's inverse), or nothing.
FEEDLINE_EXPORT std::optional<FailureKind> FailureKindNamed(std::string_view name);

}  // namespace feedline

#endif  // FEEDLINE_FAILURE_KIND_H_
