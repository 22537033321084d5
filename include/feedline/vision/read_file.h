// Reading a whole file into a reusable buffer, with failures reported as
// SampleError naming the path, so that a missing or unreadable sample is
// handled by the loader's error policy like a corrupt one.
//
// A read cannot hang or exhaust memory: only regular files are read (a FIFO,
// a device, a socket or a directory, also behind a symlink, is refused
// without reading, and opening never blocks), the size is checked against a
// limit before a byte is read, and an image file is refused from its first
// bytes when they are not a JPEG, PNG or WebP signature.
//
// Thread safety: reentrant.
#ifndef FEEDLINE_VISION_READ_FILE_H_
#define FEEDLINE_VISION_READ_FILE_H_

#include <cstdint>
#include <vector>

#include "feedline/export.h"

namespace feedline::vision {

// 1 GiB: far above any real image, far below what would exhaust memory.
inline constexpr int64_t kDefaultMaxFileBytes = int64_t{1} << 30;

struct FEEDLINE_EXPORT ReadOptions {
  // A larger file is SampleError(FailureKind::kTooLarge), found from its size before
  // reading. Must be > 0.
  int64_t max_bytes = kDefaultMaxFileBytes;
  // When true the file must start like a JPEG, PNG or WebP file: the first
  // bytes are read and checked before the rest, so a large file that is not
  // an image fails after a few bytes (SampleError(FailureKind::kFormat), the message of
  // DecodeImage).
  bool image = false;
};

// Replaces the contents of `bytes` with the file at `path` (a NUL-terminated
// string). `bytes` keeps its capacity, so a buffer reused across calls stops
// allocating once it has held the largest file.
// Throws SampleError(reason, path, message) with reason
//   "io"        the file cannot be opened or read, or is not a regular file
//               ("is a FIFO, not a regular file"),
//   "too_large" the file is larger than options.max_bytes,
//   "format"    options.image and the first bytes are no image signature.
FEEDLINE_EXPORT void ReadFile(const char* path, std::vector<uint8_t>& bytes,
                              const ReadOptions& options = {});

// "a regular file", "a directory", "a FIFO", "a character device",
// "a block device", "a socket", "a symbolic link" or "an unknown file type",
// for a st_mode.
FEEDLINE_EXPORT const char* FileTypeName(unsigned mode);

}  // namespace feedline::vision

#endif  // FEEDLINE_VISION_READ_FILE_H_
