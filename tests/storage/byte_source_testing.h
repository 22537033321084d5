// Helpers for the ByteSource tests: bytes of a pattern that no two offsets
// near each other share, and what a source streams, gathered.
#ifndef FEEDLINE_TESTS_STORAGE_BYTE_SOURCE_TESTING_H_
#define FEEDLINE_TESTS_STORAGE_BYTE_SOURCE_TESTING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/storage/byte_source.h"

namespace feedline::storage::testing {

inline std::vector<uint8_t> PatternBytes(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 31 + i / 251);
  return bytes;
}

// The bytes Stream hands out for [offset, offset + size); `pieces`, if
// given, counts the calls that handed them.
inline std::vector<uint8_t> Streamed(const ByteSource& source, uint64_t offset, uint64_t size,
                                     size_t* pieces = nullptr) {
  std::vector<uint8_t> got;
  source.Stream(offset, size, [&](const uint8_t* data, size_t n) {
    got.insert(got.end(), data, data + n);
    if (pieces != nullptr) ++*pieces;
  });
  return got;
}

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_BYTE_SOURCE_TESTING_H_
