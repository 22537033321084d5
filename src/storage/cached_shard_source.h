// CachedShardSource: a remote shard served from the node's shard cache
// (ShardCache) as a ByteSource: a range is read from the shard's whole,
// checked copy in the cache, which the first read of the shard on the node
// downloads from the server through the cache's own source of it (the
// others wait for it, in this process or another), through descriptors
// kept open (a ShardFileSource of the cache's files). Its size is the
// server's (the origin source).
//
// A range whose check fails is refetched (Refetch) by repairing the cached
// copy the calling thread read it from (ShardCache::Repair: at most once
// per shard), after which a read gives the new copy's bytes. The copy is
// named by the inode the thread read; should a new copy take that inode
// number between the read and the check, it is fetched once more (the
// once-per-shard bound holds).
//
// Thread safety: as ByteSource.
#ifndef FEEDLINE_SRC_STORAGE_CACHED_SHARD_SOURCE_H_
#define FEEDLINE_SRC_STORAGE_CACHED_SHARD_SOURCE_H_

#include <atomic>
#include <memory>
#include <string>

#include "src/storage/byte_source.h"
#include "src/storage/shard_cache.h"
#include "src/storage/shard_file_source.h"
#include "src/storage/shard_files.h"

namespace feedline::storage {

class CachedShardSource : public ByteSource {
 public:
  // Shard `shard` of `cache`, read through `files` (the cache's paths), its
  // size from `origin` (the server's file). `used`: set by the first read
  // in this process, which marks the shard recent for eviction. `evicts`:
  // the cache has a limit, so that a thread about to download lets go of
  // the descriptors it does not read. `cache`, `files` and `used` outlive
  // the source.
  CachedShardSource(std::unique_ptr<ByteSource> origin, const ShardCache* cache,
                    ShardFiles* files, size_t shard, std::atomic<bool>* used, bool evicts);

  const std::string& name() const override { return origin_->name(); }
  std::optional<uint64_t> Size(std::string* missing = nullptr) const override {
    return origin_->Size(missing);
  }
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override;
  bool Refetch(uint64_t offset, uint64_t size) const override;

 private:
  const std::unique_ptr<ByteSource> origin_;
  const ShardCache* const cache_;
  ShardFiles* const files_;
  const ShardFileSource copy_;
  const size_t shard_;
  std::atomic<bool>* const used_;
  const bool evicts_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_CACHED_SHARD_SOURCE_H_
