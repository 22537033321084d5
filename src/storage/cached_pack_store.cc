#include "src/storage/cached_pack_store.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "feedline/error.h"
#include "src/storage/cached_shard_source.h"
#include "src/storage/http_source.h"

namespace feedline::storage {
namespace {

std::vector<std::string> IndexUrlsOf(const std::vector<std::string>& tar_urls) {
  std::vector<std::string> indexes;
  for (const std::string& url : tar_urls) indexes.push_back(url.substr(0, url.size() - 4) + ".idx");
  return indexes;
}

// A shard's index: the server's file if it has one, else the index the
// cache builds while it downloads the tar (and keeps beside it), served as
// its bytes. Fetched (or built) once, by the first call, and kept: it is
// read whole while the dataset is built. Never missing: a tar missing with
// its index is the cache's Error, naming both.
class CachedIndexSource : public ByteSource {
 public:
  CachedIndexSource(std::unique_ptr<ByteSource> origin, const ShardCache* cache, size_t shard)
      : origin_(std::move(origin)), cache_(cache), shard_(shard) {}

  const std::string& name() const override { return origin_->name(); }
  std::optional<uint64_t> Size(std::string* missing = nullptr) const override {
    (void)missing;
    return Bytes().size();
  }
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override {
    const std::vector<uint8_t>& bytes = Bytes();
    if (offset > bytes.size() || size > bytes.size() - offset) {
      throw Error(name() + ": ends early");
    }
    std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(offset), size, dst);
  }

 private:
  const std::vector<uint8_t>& Bytes() const {
    constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;
    internal::MutexLock lock(&mu_);
    if (!bytes_) {
      bytes_ = origin_->ReadAll(kMaxIndexBytes);
      if (!bytes_) bytes_ = SerializeShardIndex(cache_->IndexByDownload(shard_, name()));
    }
    return *bytes_;
  }

  const std::unique_ptr<ByteSource> origin_;
  const ShardCache* const cache_;
  const size_t shard_;
  mutable internal::Mutex mu_;
  mutable std::optional<std::vector<uint8_t>> bytes_ GUARDED_BY(mu_);
};

}  // namespace

CachedPackStore::CachedPackStore(std::vector<std::string> tar_urls, size_t max_open,
                                 const RemoteOptions& options, SourceWrap wrap)
    : PackStore(std::move(wrap)),
      index_urls_(IndexUrlsOf(tar_urls)),
      client_(options),
      cache_(options.cache_dir, options.cache_limit, tar_urls, index_urls_,
             [this](const std::string& url) {
               return Wrapped(std::make_unique<HttpSource>(&client_, url));
             },
             options,
             [this] { files_.CloseUnlinked(); }),
      files_(cache_.paths(), max_open, [this] { return cache_.unlinks(); }),
      used_(new std::atomic<bool>[cache_.paths().size()]()),
      prefetch_bytes_(options.cache_limit == 0
                          ? options.prefetch_bytes
                          : std::min(options.prefetch_bytes, options.cache_limit)),
      prefetch_requests_(options.prefetch_requests) {
  std::vector<std::unique_ptr<ByteSource>> sources;
  for (size_t shard = 0; shard < tar_urls.size(); ++shard) {
    sources.push_back(std::make_unique<CachedShardSource>(
        std::make_unique<HttpSource>(&client_, tar_urls[shard]), &cache_, &files_, shard,
        &used_[shard], options.cache_limit > 0));
  }
  SetTars(std::move(sources));
}

CachedPackStore::~CachedPackStore() {
  internal::MutexLock lock(&prefetch_mu_);
  prefetcher_.reset();
}

std::unique_ptr<ByteSource> CachedPackStore::OpenFile(const std::string& location) const {
  auto origin = std::make_unique<HttpSource>(&client_, location);
  const auto at = std::find(index_urls_.begin(), index_urls_.end(), location);
  if (at == index_urls_.end()) return origin;
  return std::make_unique<CachedIndexSource>(std::move(origin), &cache_,
                                             static_cast<size_t>(at - index_urls_.begin()));
}

void CachedPackStore::PlanShards(std::vector<PlannedShard> plan) const {
  // The loader's process may hold descriptors of earlier epochs while its
  // worker processes read (and evict): let go of the evicted ones as
  // delivery goes on.
  files_.CheckUnlinks();
  if (prefetch_bytes_ == 0) return;
  internal::MutexLock lock(&prefetch_mu_);
  if (prefetcher_ == nullptr) {
    if (plan.empty()) return;
    prefetcher_ = std::make_unique<ShardPrefetcher>(&cache_, tar_bytes(), prefetch_bytes_,
                                                    prefetch_requests_);
  }
  prefetcher_->Plan(std::move(plan));
}

void CachedPackStore::PlanProgress(int64_t delivered) const {
  files_.CheckUnlinks();
  internal::MutexLock lock(&prefetch_mu_);
  if (prefetcher_ != nullptr) prefetcher_->Progress(delivered);
}

}  // namespace feedline::storage
