#include "src/storage/pack_store.h"

#include "feedline/error.h"
#include "src/storage/cached_pack_store.h"
#include "src/storage/http_pack_store.h"
#include "src/storage/local_pack_store.h"

namespace feedline::storage {

std::unique_ptr<PackStore> OpenPackStore(std::vector<std::string> tars, size_t max_open,
                                         const RemoteOptions& remote) {
  size_t remote_count = 0;
  for (const std::string& tar : tars) remote_count += IsRemoteLocation(tar);
  if (remote_count == 0) return std::make_unique<LocalPackStore>(std::move(tars), max_open);
  if (remote_count != tars.size()) {
    throw Error("shard dataset: the shards are partly local files and partly URLs (" +
                tars.front() + ", ...); give one pack's shards, all local or all remote");
  }
  if (!remote.cache_dir.empty()) {
    return std::make_unique<CachedPackStore>(std::move(tars), max_open, remote);
  }
  return std::make_unique<HttpPackStore>(std::move(tars), remote);
}

}  // namespace feedline::storage
