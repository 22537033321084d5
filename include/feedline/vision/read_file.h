// Reading a whole file into a reusable buffer, with failures reported as
// SampleError("io", path, reason) so that a missing or unreadable sample is
// handled by the loader's error policy like a corrupt one.
//
// Thread safety: reentrant.
#ifndef FEEDLINE_VISION_READ_FILE_H_
#define FEEDLINE_VISION_READ_FILE_H_

#include <cstdint>
#include <vector>

namespace feedline::vision {

// Replaces the contents of `bytes` with the file at `path` (a NUL-terminated
// string). `bytes` keeps its capacity, so a buffer reused across calls stops
// allocating once it has held the largest file. Throws SampleError("io").
void ReadFile(const char* path, std::vector<uint8_t>& bytes);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_READ_FILE_H_
