// ShardCache: whole shards of a remote pack kept in a local folder that every
// process on the node shares (RemoteOptions::cache_dir), so that each shard
// is downloaded once per node whatever the number of ranks and workers.
//
// Layout: CACHE/<16 hex digits naming the pack's URL>/shard-NNNNNN.tar, and
// beside each, while one is downloaded, shard-NNNNNN.tar.part (with its
// .part.progress) and an empty shard-NNNNNN.tar.lock.
//
// A unit whose index URL is empty is a whole file of another format (a
// Parquet file: RemoteFileCache): it is cached as a shard is, under the same
// locks, limit and eviction, with its length (from a HEAD request) as the
// only check; its name is the URL's last part, as a shard's.
//
// Ensure(shard) makes the whole shard present:
//  1. Threads of this process wait for one another (one download per shard
//     per process), then processes: a POSIX record lock (fcntl) on the
//     shard's .lock file, held by the downloading process only (a forked
//     child never inherits it, unlike flock's).
//  2. A shard already in place is complete (step 4 is the only way in).
//  3. The bytes go to .part, in parts fetched at once (RemoteOptions::
//     download_parts, download_part_bytes; parted_download.h), with
//     .part.progress saying what each part has received: a download that a
//     killed process left is resumed part by part, not restarted.
//  4. Every record's CRC-32C is checked against the index; a .part that
//     fails is downloaded again from the start, once. Records that fail
//     again are damaged on the server: they are listed in
//     shard-NNNNNN.tar.damaged (damaged_records.h), written before the tar
//     is put in place, so that the shard's other records are read and no
//     thread or process of the node downloads it again for them (a download
//     anew removes the list first). Then the file is fsynced and renamed
//     into place.
// A shard with no index on the server (IndexByDownload) is downloaded the
// same way, under the same locks, and indexed as its bytes arrive
// (TarIndexer); its index is saved as shard-NNNNNN.idx beside the tar before
// the tar is put in place, and is kept when the tar is evicted, so that a
// later download or run checks the shard against it. Such a download starts
// from the first byte (a .part left by a killed one is not resumed).
//
// Before a download, released shards (Release: the epoch's plan has
// passed them) and then the least recently used whole shards are deleted
// until the cache holds at most `cache_limit` bytes with the new one (under
// a cache-wide lock: a mutex for this process's threads, then a record lock
// for processes), and again, under the same lock as its rename, when it is
// put in place (concurrent downloads each made room for themselves only),
// so that the whole files never exceed the limit; readers that hold one
// open keep reading it (an unlinked file stays readable), and a shard
// deleted before it was opened is downloaded again.
//
// Repair: a record read from the cache whose check fails, and that is not
// listed as damaged on the server, is the cached copy's damage (bit rot, a
// bad write): under the shard's locks, if the file in place is still the one
// read (same inode), it is unlinked and downloaded again, at most once per
// shard by each ShardCache (a dataset in a process): a copy still bad after
// that is the record's failure, not a download per read.
//
// Every file the cache unlinks (eviction, repair) is counted in
// CACHE/.feedline-unlinks (SharedCounter), which readers on the node look
// at to close the descriptors of files that are gone (ShardFiles): an
// evicted shard's blocks are freed once no process holds it open, so
// the disk holds at most `cache_limit` plus the downloads under way and the
// shards being read at that moment.
//
// After fork, a child forgets the downloads its parent's threads had under
// way (they are not in the child; the parent's record lock keeps the child
// waiting until the parent's download is done): a pthread_atfork handler
// holds every cache's mutex across fork and clears the child's list.
//
// Thread safety: Ensure and Touch may be called from many threads and
// processes at once.
#ifndef FEEDLINE_SRC_STORAGE_SHARD_CACHE_H_
#define FEEDLINE_SRC_STORAGE_SHARD_CACHE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/core/mutex.h"
#include "feedline/storage/shard_index.h"
#include "feedline/storage/remote_options.h"
#include "src/storage/byte_source.h"
#include "src/storage/shared_counter.h"

namespace feedline::storage {

class ShardCache {
 public:
  // `tar_urls` and `index_urls`: the pack's shards, in order ("" for a
  // whole file with no index, above), each read through the source that
  // `open` gives for it (the server's: HttpSource); `download`: the parts a
  // download is fetched in (download_part_bytes, download_parts).
  // `after_unlink`: called in this process after it unlinked cached files
  // (may be empty). Throws Error naming `cache_dir` if it cannot be created.
  ShardCache(std::string cache_dir, uint64_t cache_limit, std::vector<std::string> tar_urls,
             std::vector<std::string> index_urls, OpenByteSource open,
             const RemoteOptions& download, std::function<void()> after_unlink = {});
  ~ShardCache();
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  // Where shard `shard` is kept (whether or not it is there now).
  const std::string& path(size_t shard) const { return paths_[shard]; }
  const std::vector<std::string>& paths() const { return paths_; }

  // Makes shard `shard` present in the cache as a whole, checked file (the
  // steps above). Throws Error naming the URL (a failed download) or the
  // file (a local failure).
  void Ensure(size_t shard) const;

  // The index of shard `shard`, which the server has none of: the one saved
  // by an earlier call (in this or another process), else built while the
  // tar is downloaded into the cache (above). Throws Error naming
  // `index_location` if the tar is missing too, Error as TarIndexer for a
  // tar that is not a shard.
  ShardIndex IndexByDownload(size_t shard, const std::string& index_location) const;

  // Bytes [offset, offset + size) of shard `shard`, read from the file
  // `read_device`:`read_inode` (held open by the caller), failed their
  // check: repairs the cached copy (above). True: the file in place is now
  // another (read them again); false: they are damaged on the server, or
  // this cache repaired the shard already. Throws Error as Ensure.
  bool Repair(size_t shard, uint64_t offset, uint64_t size, dev_t read_device,
              ino_t read_inode) const;

  // How many files the cache has unlinked, by any process on the node.
  uint64_t unlinks() const { return unlinks_.value(); }

  // Marks shard `shard` used now (its file's mtime), for eviction order.
  void Touch(size_t shard) const;
  // Marks shard `shard` no longer needed by the plan (the oldest mtime): it
  // is the first to go when room is made, before the least recently used.
  void Release(size_t shard) const;

  // The downloads this process made (one per shard not found in place).
  int64_t downloads() const;

 private:
  static void PrepareFork() NO_THREAD_SAFETY_ANALYSIS;
  static void ParentAfterFork() NO_THREAD_SAFETY_ANALYSIS;
  static void ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS;
  void Download(size_t shard) const;
  // What a download of `shard` is checked against: its index (the
  // server's, else the one saved beside it), or, for a unit with no index
  // URL, its length alone (a HEAD request).
  ShardIndex IndexOf(size_t shard) const;
  // The index IndexByDownload saved for `shard`, if there is one.
  std::optional<ShardIndex> SavedIndex(size_t shard) const;
  // Marks `shard` downloading in this process once no other thread is
  // (false: it is in place by then, unless `even_if_present`); EndDownload
  // undoes it.
  bool BeginDownload(size_t shard, bool even_if_present = false) const;
  void EndDownload(size_t shard) const;
  // Deletes released, then least recently used, whole files (not `keep`)
  // until the cache holds at most `cache_limit` bytes with `bytes` more,
  // under the cache-wide lock.
  void MakeRoom(uint64_t bytes, size_t keep) const;
  // Renames `shard`'s checked .part into place, making room for its `bytes`
  // under the same cache-wide lock: whole files never exceed the limit.
  void PutInPlace(size_t shard, uint64_t bytes) const;
  // MakeRoom's deletions, the cache-wide lock held; whether any file went.
  bool EvictFor(uint64_t bytes, size_t keep) const;
  // Counts (and tells this process of) files unlinked from the cache.
  void Unlinked() const;

  const std::string root_;  // cache_dir
  const uint64_t limit_;
  const std::vector<std::string> tar_urls_;
  const std::vector<std::string> index_urls_;
  const OpenByteSource open_;
  const uint64_t part_bytes_;
  const int parts_at_once_;
  std::vector<std::string> paths_;
  const SharedCounter unlinks_;
  const std::function<void()> after_unlink_;
  mutable internal::Mutex mu_;
  mutable internal::CondVar done_;
  mutable std::set<size_t> downloading_ GUARDED_BY(mu_);
  mutable int64_t downloads_ GUARDED_BY(mu_) = 0;
  mutable std::set<size_t> repaired_ GUARDED_BY(mu_);  // by this instance
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_SHARD_CACHE_H_
