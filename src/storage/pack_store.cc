#include "src/storage/pack_store.h"

#include "feedline/error.h"
#include "src/storage/cached_pack_store.h"
#include "src/storage/http_pack_store.h"
#include "src/storage/local_pack_store.h"
#include "src/storage/tar_indexer.h"

namespace feedline::storage {
namespace {

constexpr uint64_t kMaxTextBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

}  // namespace

void PackStore::SetTars(std::vector<std::unique_ptr<ByteSource>> tars) {
  tars_.clear();
  for (std::unique_ptr<ByteSource>& source : tars) tars_.push_back(Wrapped(std::move(source)));
  tar_bytes_.assign(tars_.size(), 0);
}

std::unique_ptr<ByteSource> PackStore::Wrapped(std::unique_ptr<ByteSource> source) const {
  return wrap_ ? wrap_(std::move(source)) : std::move(source);
}

std::optional<std::string> PackStore::ReadText(const std::string& location) const {
  const std::optional<std::vector<uint8_t>> bytes =
      Wrapped(OpenFile(location))->ReadAll(kMaxTextBytes);
  if (!bytes) return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

std::optional<ShardIndex> PackStore::ReadIndex(const std::string& location) const {
  const std::optional<std::vector<uint8_t>> bytes =
      Wrapped(OpenFile(location))->ReadAll(kMaxIndexBytes);
  if (!bytes) return std::nullopt;
  return ParseShardIndex(*bytes, location);
}

ShardIndex PackStore::IndexTar(size_t shard, const std::string& index_location) const {
  const ByteSource& source = tar(shard);
  std::string missing;
  const std::optional<uint64_t> size = source.Size(&missing);
  if (!size) {
    source.ThrowMissing(index_location, index_location +
                                            ": cannot open shard index, nor is " +
                                            source.name() + " there to index: " + missing);
  }
  TarIndexer indexer(source.name());
  source.Stream(0, *size, [&indexer](const uint8_t* data, size_t n) { indexer.Feed(data, n); });
  return indexer.Finish();
}

void PackStore::CheckTar(size_t shard, uint64_t bytes) const {
  const ByteSource& source = tar(shard);
  std::string missing;
  const std::optional<uint64_t> size = source.Size(&missing);
  if (!size) source.ThrowMissing(source.name(), source.name() + ": cannot open shard: " + missing);
  if (*size < bytes) {
    throw Error(source.name() + ": truncated shard: " + std::to_string(*size) +
                " bytes, its index expects " + std::to_string(bytes));
  }
  tar_bytes_[shard] = bytes;
}

std::string PackStore::ReadCheckedRange(size_t shard, uint64_t offset, size_t size,
                                        uint8_t* dst, const RangeCheck& check) const {
  const ByteSource& source = tar(shard);
  source.ReadRange(offset, size, dst);
  std::string problem = check(dst);
  if (problem.empty() || !source.Refetch(offset, size)) return problem;
  source.ReadRange(offset, size, dst);
  return check(dst);
}

std::unique_ptr<PackStore> OpenPackStore(std::vector<std::string> tars, size_t max_open,
                                         const RemoteOptions& remote, SourceWrap wrap) {
  size_t remote_count = 0;
  for (const std::string& tar : tars) remote_count += IsRemoteLocation(tar);
  if (remote_count == 0) {
    return std::make_unique<LocalPackStore>(std::move(tars), max_open, std::move(wrap));
  }
  if (remote_count != tars.size()) {
    throw Error("shard dataset: the shards are partly local files and partly URLs (" +
                tars.front() + ", ...); give one pack's shards, all local or all remote");
  }
  if (!remote.cache_dir.empty()) {
    return std::make_unique<CachedPackStore>(std::move(tars), max_open, remote, std::move(wrap));
  }
  return std::make_unique<HttpPackStore>(std::move(tars), remote, std::move(wrap));
}

}  // namespace feedline::storage
