#include "src/storage/cached_pack_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

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
             &remote_.client(), [this] { files_.CloseUnlinked(); }),
      files_(cache_.paths(), max_open, [this] { return cache_.unlinks(); }),
      used_(new std::atomic<bool>[cache_.paths().size()]()),
      prefetch_bytes_(options.cache_limit == 0
                          ? options.prefetch_bytes
                          : std::min(options.prefetch_bytes, options.cache_limit)),
      prefetch_requests_(options.prefetch_requests),
      evicts_(options.cache_limit > 0),
      tar_bytes_(cache_.paths().size(), 0) {}

void CachedPackStore::CheckTar(size_t shard, uint64_t bytes) const {
  remote_.CheckTar(shard, bytes);
  tar_bytes_[shard] = bytes;
}

void CachedPackStore::PlanShards(std::vector<PlannedShard> plan) const {
  // The loader's process may hold descriptors of earlier epochs while its
  // worker processes read (and evict): let go of the evicted ones as
  // delivery goes on.
  files_.CheckUnlinks();
  if (prefetch_bytes_ == 0) return;
  std::lock_guard<std::mutex> lock(prefetch_mu_);
  if (prefetcher_ == nullptr) {
    if (plan.empty()) return;
    prefetcher_ = std::make_unique<ShardPrefetcher>(&cache_, tar_bytes_, prefetch_bytes_,
                                                    prefetch_requests_);
  }
  prefetcher_->Plan(std::move(plan));
}

void CachedPackStore::PlanProgress(int64_t delivered) const {
  files_.CheckUnlinks();
  std::lock_guard<std::mutex> lock(prefetch_mu_);
  if (prefetcher_ != nullptr) prefetcher_->Progress(delivered);
}

const ShardPrefetcher* CachedPackStore::prefetcher() const {
  std::lock_guard<std::mutex> lock(prefetch_mu_);
  return prefetcher_.get();
}

void CachedPackStore::ReadRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst) const {
  ReadInto(shard, offset, size, dst);
}

std::string CachedPackStore::ReadCheckedRange(size_t shard, uint64_t offset, size_t size,
                                              uint8_t* dst, const RangeCheck& check) const {
  {
    // Pinned until the cache has decided: the file read stays open, so its
    // inode names it alone.
    const ShardFiles::Handle file = ReadInto(shard, offset, size, dst);
    std::string problem = check(dst);
    struct stat st;
    if (problem.empty() || ::fstat(file.fd(), &st) != 0 ||
        !cache_.Repair(shard, offset, size, st.st_dev, st.st_ino)) {
      return problem;
    }
  }
  ReadInto(shard, offset, size, dst);
  return check(dst);
}

ShardFiles::Handle CachedPackStore::ReadInto(size_t shard, uint64_t offset, size_t size,
                                             uint8_t* dst) const {
  ShardFiles::Handle file;
  // Not in the cache (never downloaded, or evicted since): fetched whole,
  // then opened. An open descriptor keeps reading its file even if another
  // process evicts it. A shard just put in place may be evicted again
  // before it is opened, by the downloads of other threads and processes
  // when the cache holds fewer shards than are downloaded at once: fetched
  // again, a few times.
  constexpr int kDownloads = 4;
  for (int attempt = 0;; ++attempt) {
    try {
      file = files_.Acquire(shard);
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
    if (evicts_) files_.CloseUnpinned();
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
  return file;
}

}  // namespace feedline::storage
