// RemoteFileCache: whole files that an HTTP(S) server or an S3 endpoint
// serves (a Parquet corpus: "s3://bucket/corpus/part-0.parquet"), kept in the
// node's cache folder (RemoteOptions::cache_dir) that every process and
// thread on the node naming it shares, as a remote pack's shards are: the
// same cache (src/storage/shard_cache.h), so the same file locks, limit
// (cache_limit), eviction and resumed downloads in parts. Each file is
// downloaded once per node whatever the number of ranks and workers; a
// reader then opens the local copy (Path) with whatever reads its format.
//
// Fetching ahead: told the epoch's plan (Plan: the files in the order the
// epoch first needs them, with where each is last needed) and the
// delivered samples (Progress), it downloads the next files of the plan
// before their reads ask for them, within prefetch_bytes (and cache_limit)
// and prefetch_requests, on threads of its own (ShardPrefetcher): the bytes
// come onto the node's disk with no Python and no GIL involved. Files the
// plan has passed go first when the cache makes room.
//
// The unit is the whole file: a file is fetched (and evicted) whole, so a
// cache_limit below the largest file keeps only that file. A cached copy is
// checked by its length: one whose length is not the server's (the file was
// replaced on the server since it was cached) is downloaded again.
//
// Thread safety: every method may be called from many threads and
// processes at once.
#ifndef FEEDLINE_STORAGE_REMOTE_FILE_CACHE_H_
#define FEEDLINE_STORAGE_REMOTE_FILE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/export.h"
#include "feedline/storage/remote_options.h"

namespace feedline::storage {

// A file of an epoch's plan: the position (in samples of the epoch's order)
// of its last use.
struct FEEDLINE_EXPORT PlannedFile {
  size_t file = 0;
  int64_t last_use = 0;
};

class FEEDLINE_EXPORT RemoteFileCache {
 public:
  // `urls`: the files (http://, https://, s3://); `sizes`: each one's length
  // on the server (as RemoteFileReader::Size gives it). Throws Error if
  // options.cache_dir is empty or cannot be created (naming it), if the
  // options are out of range, or if there is not one size per URL.
  RemoteFileCache(std::vector<std::string> urls, std::vector<uint64_t> sizes,
                  RemoteOptions options);
  ~RemoteFileCache();
  RemoteFileCache(const RemoteFileCache&) = delete;
  RemoteFileCache& operator=(const RemoteFileCache&) = delete;

  size_t size() const;
  // Where file `file` is kept (whether or not it is there now).
  const std::string& Path(size_t file) const;
  // Makes file `file` present in the cache, whole (downloaded unless it is
  // in place; waits for a download by another thread or process), and
  // returns its path. A copy may be evicted by another process's download
  // before the caller opens it: call again if the open finds no file.
  // Throws Error naming the URL (a failed download: the status, the
  // attempts) or the local file.
  const std::string& Ensure(size_t file) const;

  // Whether file `file` is in the cache now, whole, with the length the
  // server gave (a stat: no request, no wait), so that a caller may skip
  // Ensure (and, from Python, releasing the GIL for it).
  bool Present(size_t file) const;

  // The epoch's plan, in first-use order (each file once); replaces the
  // last one. Only takes a lock and wakes the fetching threads.
  void Plan(std::vector<PlannedFile> plan) const;
  // The first `delivered` samples of the plan's order are delivered.
  void Progress(int64_t delivered) const;

  // Downloads this process made (one per file not found in place), the
  // downloads fetching ahead started, and the most bytes ahead at once.
  int64_t downloads() const;
  int64_t prefetches() const;
  uint64_t peak_bytes_ahead() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_STORAGE_REMOTE_FILE_CACHE_H_
