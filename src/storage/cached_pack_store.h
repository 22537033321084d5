// CachedPackStore: a remote pack read through the node's shard cache
// (RemoteOptions::cache_dir, ShardCache): the manifest, classes and indexes
// come from the server as for HttpPackStore; a record is read from its
// shard's whole, checked copy in the cache, which the first read of the
// shard on the node downloads (the others wait for it, in this process or
// another). Reads are positioned reads of descriptors kept open
// (ShardFiles), closed once the cache has unlinked their file (ShardCache::
// unlinks), so that evicted shards free their blocks. A record whose check
// fails is read again after the cache repairs its copy (ReadCheckedRange,
// ShardCache::Repair). Told the epoch's plan (PlanShards), it fetches shards
// ahead of the reads (ShardPrefetcher, RemoteOptions::prefetch_bytes and
// prefetch_requests).
//
// Thread safety: as PackStore.
#ifndef FEEDLINE_SRC_STORAGE_CACHED_PACK_STORE_H_
#define FEEDLINE_SRC_STORAGE_CACHED_PACK_STORE_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/storage/http_pack_store.h"
#include "src/storage/pack_store.h"
#include "src/storage/shard_cache.h"
#include "src/storage/shard_files.h"
#include "src/storage/shard_prefetcher.h"

namespace feedline::storage {

class CachedPackStore : public PackStore {
 public:
  // Throws Error naming options.cache_dir if it cannot be created.
  CachedPackStore(std::vector<std::string> tar_urls, size_t max_open,
                  const RemoteOptions& options);

  std::optional<std::string> ReadText(const std::string& location) const override {
    return remote_.ReadText(location);
  }
  std::optional<ShardIndex> ReadIndex(const std::string& location) const override {
    return remote_.ReadIndex(location);
  }
  // The tar downloaded into the cache and indexed on the way (one GET); the
  // index is kept beside it (ShardCache::IndexByDownload).
  ShardIndex IndexTar(size_t shard, const std::string& index_location) const override {
    return cache_.IndexByDownload(shard, index_location);
  }
  // Also learns the tar's size, for the bytes fetched ahead.
  void CheckTar(size_t shard, uint64_t bytes) const override;
  void ReadRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst) const override;
  std::string ReadCheckedRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst,
                               const RangeCheck& check) const override;
  size_t max_open() const override { return files_.max_open(); }
  size_t open_count() const override { return files_.open_count(); }
  void PlanShards(std::vector<PlannedShard> plan) const override;
  void PlanProgress(int64_t delivered) const override;
  const ShardCache& cache() const { return cache_; }
  // The prefetcher, once a plan has started it (null before, and without
  // prefetch_bytes).
  const ShardPrefetcher* prefetcher() const;

 private:
  // ReadRange's read; the descriptor read stays pinned while the handle
  // lives.
  ShardFiles::Handle ReadInto(size_t shard, uint64_t offset, size_t size, uint8_t* dst) const;

  HttpPackStore remote_;
  ShardCache cache_;
  mutable ShardFiles files_;
  // Per shard: read by this process yet (its first read marks it used, for
  // the cache's eviction order).
  std::unique_ptr<std::atomic<bool>[]> used_;
  const uint64_t prefetch_bytes_;  // the bound, cache_limit included; 0: none
  const int prefetch_requests_;
  const bool evicts_;  // a cache_limit is set
  // Each tar's size (CheckTar, while the dataset is built).
  mutable std::vector<uint64_t> tar_bytes_;
  mutable std::mutex prefetch_mu_;
  // Made by the first plan; last, so that its threads stop (and their
  // downloads end) before the cache and the client they use go.
  mutable std::unique_ptr<ShardPrefetcher> prefetcher_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_CACHED_PACK_STORE_H_
