#include "src/storage/cached_shard_source.h"

#include <sys/stat.h>

#include <cerrno>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

// The cached file that this thread read last, for Refetch: the file in
// place may have been replaced since (by another thread's or process's
// repair or eviction), and only the copy actually read may be repaired.
struct LastRead {
  const void* source = nullptr;
  uint64_t offset = 0;
  dev_t device = 0;
  ino_t inode = 0;
};
thread_local LastRead last_read;

}  // namespace

CachedShardSource::CachedShardSource(std::unique_ptr<ByteSource> origin, const ShardCache* cache,
                                     ShardFiles* files, size_t shard, std::atomic<bool>* used,
                                     bool evicts)
    : origin_(std::move(origin)),
      cache_(cache),
      files_(files),
      copy_(files, shard),
      shard_(shard),
      used_(used),
      evicts_(evicts) {}

void CachedShardSource::ReadRange(uint64_t offset, size_t size, uint8_t* dst) const {
  // Not in the cache (never downloaded, or evicted since): fetched whole,
  // then read. An open descriptor keeps reading its file even if another
  // process evicts it. A shard just put in place may be evicted again
  // before it is opened, by the downloads of other threads and processes
  // when the cache holds fewer shards than are downloaded at once: fetched
  // again, a few times.
  constexpr int kDownloads = 4;
  for (int attempt = 0;; ++attempt) {
    try {
      const ShardFiles::Handle file = copy_.ReadPinned(offset, size, dst);
      struct stat st {};
      if (::fstat(file.fd(), &st) == 0) last_read = LastRead{this, offset, st.st_dev, st.st_ino};
      break;
    } catch (const OsError& e) {
      if (e.error_number() != ENOENT) throw;
      if (attempt == kDownloads) {
        throw Error(std::string(e.what()) + " (evicted each of " + std::to_string(kDownloads) +
                    " times it was downloaded before it could be opened: cache_limit holds "
                    "fewer shards than are downloaded at once)");
      }
    }
    // A download takes a while, during which other processes may evict
    // what this one holds open: let go of it first (reopening costs an
    // open() each, nothing next to a download).
    if (evicts_) files_->CloseUnpinned();
    cache_->Ensure(shard_);
  }
  if (!used_->exchange(true, std::memory_order_relaxed)) cache_->Touch(shard_);
}

bool CachedShardSource::Refetch(uint64_t offset, uint64_t size) const {
  const LastRead read = last_read;
  if (read.source != this || read.offset != offset) return false;
  last_read = LastRead{};
  return cache_->Repair(shard_, offset, size, read.device, read.inode);
}

}  // namespace feedline::storage
