#include "src/storage/cached_pack_store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

std::vector<std::string> IndexUrlsOf(const std::vector<std::string>& tar_urls) {
  std::vector<std::string> indexes;
  for (const std::string& url : tar_urls) indexes.push_back(url.substr(0, url.size() - 4) + ".idx");
  return indexes;
}

}  // namespace

CachedPackStore::CachedPackStore(std::vector<std::string> tar_urls, size_t max_open,
                                 const RemoteOptions& options)
    : remote_(tar_urls, options),
      cache_(options.cache_dir, options.cache_limit, tar_urls, IndexUrlsOf(tar_urls),
             &remote_.client()),
      files_(cache_.paths(), max_open),
      used_(new std::atomic<bool>[cache_.paths().size()]()) {}

void CachedPackStore::ReadRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst) const {
  ShardFiles::Handle file;
  // Not in the cache (never downloaded, or evicted since): fetched whole,
  // then opened. An open descriptor keeps reading its file even if another
  // process evicts it.
  for (int attempt = 0;; ++attempt) {
    try {
      file = files_.Acquire(shard);
      break;
    } catch (const OsError& e) {
      if (e.error_number() != ENOENT || attempt > 0) throw;
    }
    cache_.Ensure(shard);
  }
  if (!used_[shard].exchange(true, std::memory_order_relaxed)) cache_.Touch(shard);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(file.fd(), dst + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(cache_.path(shard) + ": cannot read: " + std::strerror(errno));
    if (n == 0) throw Error(cache_.path(shard) + ": cached shard ends early");
    done += static_cast<size_t>(n);
  }
}

}  // namespace feedline::storage
