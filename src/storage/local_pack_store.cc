#include "src/storage/local_pack_store.h"

#include "src/storage/local_file_source.h"
#include "src/storage/shard_file_source.h"

namespace feedline::storage {

LocalPackStore::LocalPackStore(std::vector<std::string> tars, size_t max_open, SourceWrap wrap)
    : PackStore(std::move(wrap)), files_(std::move(tars), max_open) {
  std::vector<std::unique_ptr<ByteSource>> sources;
  for (size_t shard = 0; shard < files_.paths().size(); ++shard) {
    sources.push_back(std::make_unique<ShardFileSource>(&files_, shard));
  }
  SetTars(std::move(sources));
}

std::unique_ptr<ByteSource> LocalPackStore::OpenFile(const std::string& location) const {
  return std::make_unique<LocalFileSource>(location);
}

}  // namespace feedline::storage
