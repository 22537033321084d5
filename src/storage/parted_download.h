// DownloadInParts: a remote file written into a local one as parts fetched at
// once, resumable part by part after a kill.
//
// Part k is bytes [k * part_bytes, min((k + 1) * part_bytes, size)); each is
// one ranged GET (ByteSource::Stream of the origin: HttpSource retries), up to
// `parts_at_once` running at once on threads of their own, each part written
// where it belongs as its bytes arrive. Beside FILE, FILE.progress records
// how many bytes of each part have arrived, written after the bytes
// themselves (so it never claims more than FILE holds, even if the process
// is killed between the two writes), and a later call continues each part
// where it stopped. A FILE.progress made for another size or part size is
// not trusted: the download starts again. A FILE with no FILE.progress (left
// by a download that wrote from the first byte on, one request) counts its
// length as received from the first byte.
//
// Why parts: over a long or lossy path, one TCP connection's rate is bounded
// by its window and by its losses; several connections share the path's
// bandwidth (what S3 clients do for large objects).
//
// The caller holds FILE exclusively (ShardCache: its locks) and checks the
// bytes afterwards; DownloadInParts checks nothing but the lengths.
//
// Thread safety: a function of its arguments; the origin is shared.
#ifndef FEEDLINE_SRC_STORAGE_PARTED_DOWNLOAD_H_
#define FEEDLINE_SRC_STORAGE_PARTED_DOWNLOAD_H_

#include <cstdint>
#include <string>

#include "src/storage/byte_source.h"

namespace feedline::storage {

struct PartedDownload {
  uint64_t size = 0;        // the remote file's length
  std::string file;         // the local file written
  uint64_t part_bytes = 0;  // > 0
  int parts_at_once = 1;    // >= 1
};

// Makes `download.file` hold all `download.size` bytes of `origin`, each
// part a Stream of its range.
// Returns the bytes that were already there (0: it started from nothing).
// Throws the first failure (an Error naming the URL and range, or the file);
// the other parts stop at their next piece, and what every part received is
// kept for the next call.
uint64_t DownloadInParts(const ByteSource& origin, const PartedDownload& download);

// Forgets what was received: FILE emptied, FILE.progress removed. Throws
// Error naming the file.
void RestartDownload(const std::string& file);

// Removes FILE.progress once FILE is whole (before it is renamed).
void FinishDownload(const std::string& file);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_PARTED_DOWNLOAD_H_
