// CachedPackStore: a remote pack read through the node's shard cache
// (RemoteOptions::cache_dir, ShardCache): the manifest, classes and indexes
// come from the server as for HttpPackStore (an index the server lacks is
// built as its tar downloads into the cache, and kept there:
// ShardCache::IndexByDownload); each tar is a CachedShardSource, read from
// its shard's whole, checked copy in the cache. Descriptors of cached files
// are closed once the cache has unlinked them (ShardCache::unlinks), so that
// evicted shards free their blocks. Told the epoch's plan (PlanShards), it
// fetches shards ahead of the reads (ShardPrefetcher, RemoteOptions::
// prefetch_bytes and prefetch_requests).
//
// Thread safety: as PackStore.
#ifndef FEEDLINE_SRC_STORAGE_CACHED_PACK_STORE_H_
#define FEEDLINE_SRC_STORAGE_CACHED_PACK_STORE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "src/core/mutex.h"
#include "src/storage/http_client.h"
#include "src/storage/pack_store.h"
#include "src/storage/shard_cache.h"
#include "src/storage/shard_files.h"
#include "src/storage/shard_prefetcher.h"

namespace feedline::storage {

class CachedPackStore : public PackStore {
 public:
  // Throws Error naming options.cache_dir if it cannot be created.
  CachedPackStore(std::vector<std::string> tar_urls, size_t max_open,
                  const RemoteOptions& options, SourceWrap wrap = {});
  ~CachedPackStore() override;

  size_t max_open() const override { return files_.max_open(); }
  size_t open_count() const override { return files_.open_count(); }
  void PlanShards(std::vector<PlannedShard> plan) const override;
  void PlanProgress(int64_t delivered) const override;

 protected:
  // An index URL of the pack: the server's index, else the one the cache
  // builds and keeps; any other: the server's file.
  std::unique_ptr<ByteSource> OpenFile(const std::string& location) const override;

 private:
  const std::vector<std::string> index_urls_;
  HttpClient client_;
  ShardCache cache_;
  mutable ShardFiles files_;
  // Per shard: read by this process yet (its first read marks it used, for
  // the cache's eviction order).
  std::unique_ptr<std::atomic<bool>[]> used_;
  const uint64_t prefetch_bytes_;  // the bound, cache_limit included; 0: none
  const int prefetch_requests_;
  mutable internal::Mutex prefetch_mu_;
  // Made by the first plan; reset first, so that its threads stop (and
  // their downloads end) before the cache and the client they use go.
  mutable std::unique_ptr<ShardPrefetcher> prefetcher_ GUARDED_BY(prefetch_mu_);
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_CACHED_PACK_STORE_H_
