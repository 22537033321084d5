// CRC-32C (Castagnoli), the checksum of the shard index: of every record's
// image bytes and of the index file itself. The same polynomial as iSCSI,
// ext4 and Python's `crc32c` package, so a shard can be checked elsewhere.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (about 10 GB/s),
// else a table (about 1 GB/s); both give the same value.
//
// Thread safety: reentrant.
#ifndef FEEDLINE_STORAGE_CRC32C_H_
#define FEEDLINE_STORAGE_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "feedline/export.h"

namespace feedline::storage {

// The CRC-32C of `size` bytes at `data`, continuing from `crc` (0 to start):
// Crc32c(b, Crc32c(a)) == Crc32c(a + b).
FEEDLINE_EXPORT uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_CRC32C_H_
