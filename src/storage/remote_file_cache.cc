#include "feedline/storage/remote_file_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "src/storage/http_client.h"
#include "src/storage/http_source.h"
#include "src/storage/shard_cache.h"
#include "src/storage/shard_prefetcher.h"

namespace feedline::storage {

namespace {

const std::string& CheckedFolder(const RemoteOptions& options) {
  if (options.cache_dir.empty()) throw Error("RemoteFileCache: no cache_dir given");
  return options.cache_dir;
}

}  // namespace

struct RemoteFileCache::State {
  State(std::vector<std::string> urls, std::vector<uint64_t> sizes, const RemoteOptions& options)
      : urls(std::move(urls)),
        sizes(std::move(sizes)),
        client(options),
        // No index URLs: each file is a whole unit checked by its length.
        cache(CheckedFolder(options), options.cache_limit, this->urls,
              std::vector<std::string>(this->urls.size()),
              [this](const std::string& url) -> std::unique_ptr<ByteSource> {
                return std::make_unique<HttpSource>(&client, url);
              },
              options),
        used(new std::atomic<bool>[this->urls.size()]()),
        prefetch_bytes(options.cache_limit == 0
                           ? options.prefetch_bytes
                           : std::min(options.prefetch_bytes, options.cache_limit)),
        prefetch_requests(options.prefetch_requests) {}

  const std::vector<std::string> urls;
  const std::vector<uint64_t> sizes;
  HttpClient client;
  ShardCache cache;
  // Per file: used by this process yet (its first use marks it recent, for
  // the cache's eviction order).
  std::unique_ptr<std::atomic<bool>[]> used;
  const uint64_t prefetch_bytes;  // 0: no fetching ahead
  const int prefetch_requests;
  mutable std::mutex prefetch_mu;
  // Made by the first plan; destroyed first (its threads use the cache).
  mutable std::unique_ptr<ShardPrefetcher> prefetcher;

  ~State() { prefetcher.reset(); }
};

RemoteFileCache::RemoteFileCache(std::vector<std::string> urls, std::vector<uint64_t> sizes,
                                 RemoteOptions options) {
  if (urls.size() != sizes.size()) {
    throw Error("RemoteFileCache: " + std::to_string(sizes.size()) + " sizes for " +
                std::to_string(urls.size()) + " files");
  }
  state_ = std::make_unique<State>(std::move(urls), std::move(sizes), options);
}

RemoteFileCache::~RemoteFileCache() = default;

size_t RemoteFileCache::size() const { return state_->urls.size(); }

const std::string& RemoteFileCache::Path(size_t file) const {
  if (file >= size()) {
    throw Error("RemoteFileCache: no file " + std::to_string(file) + " (it has " +
                std::to_string(size()) + ")");
  }
  return state_->cache.path(file);
}

const std::string& RemoteFileCache::Ensure(size_t file) const {
  const std::string& path = Path(file);
  const ShardCache& cache = state_->cache;
  cache.Ensure(file);
  const uint64_t expected = state_->sizes[file];
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    // Held open while the cache decides, so that its inode names it alone.
    struct stat st {};
    const bool stale = ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) != expected;
    if (stale && !cache.Repair(file, 0, 0, st.st_dev, st.st_ino)) {
      ::close(fd);
      throw Error(state_->urls[file] + ": its cached copy " + path + " holds " +
                  std::to_string(st.st_size) + " bytes, the server gave " +
                  std::to_string(expected) + " when the dataset was made (the file changed "
                  "on the server: make the dataset again)");
    }
    ::close(fd);
    if (stale) {
      // Downloaded again: the server's file now, which must be the one the
      // dataset was made with.
      struct stat again {};
      if (::stat(path.c_str(), &again) == 0 && static_cast<uint64_t>(again.st_size) != expected) {
        throw Error(state_->urls[file] + ": the server now serves " +
                    std::to_string(again.st_size) + " bytes, " + std::to_string(expected) +
                    " when the dataset was made (the file changed: make the dataset again)");
      }
    }
  }
  if (!state_->used[file].exchange(true, std::memory_order_relaxed)) cache.Touch(file);
  return path;
}

bool RemoteFileCache::Present(size_t file) const {
  struct stat st {};
  return ::stat(Path(file).c_str(), &st) == 0 &&
         static_cast<uint64_t>(st.st_size) == state_->sizes[file];
}

void RemoteFileCache::Plan(std::vector<PlannedFile> plan) const {
  if (state_->prefetch_bytes == 0) return;
  std::vector<PlannedShard> shards;
  shards.reserve(plan.size());
  for (const PlannedFile& planned : plan) {
    if (planned.file < size()) shards.push_back(PlannedShard{planned.file, planned.last_use});
  }
  std::lock_guard<std::mutex> lock(state_->prefetch_mu);
  if (state_->prefetcher == nullptr) {
    if (shards.empty()) return;
    state_->prefetcher = std::make_unique<ShardPrefetcher>(
        &state_->cache, state_->sizes, state_->prefetch_bytes, state_->prefetch_requests);
  }
  state_->prefetcher->Plan(std::move(shards));
}

void RemoteFileCache::Progress(int64_t delivered) const {
  std::lock_guard<std::mutex> lock(state_->prefetch_mu);
  if (state_->prefetcher != nullptr) state_->prefetcher->Progress(delivered);
}

int64_t RemoteFileCache::downloads() const { return state_->cache.downloads(); }

int64_t RemoteFileCache::prefetches() const {
  std::lock_guard<std::mutex> lock(state_->prefetch_mu);
  return state_->prefetcher == nullptr ? 0 : state_->prefetcher->started();
}

uint64_t RemoteFileCache::peak_bytes_ahead() const {
  std::lock_guard<std::mutex> lock(state_->prefetch_mu);
  return state_->prefetcher == nullptr ? 0 : state_->prefetcher->peak_bytes_ahead();
}

}  // namespace feedline::storage
