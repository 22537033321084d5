// LocalPackStore: a pack on the local file system. Tars are read with pread
// through ShardFiles (one descriptor per shard, kept open, bounded, reopened
// after fork: ShardFileSource); its other files are opened for each read
// (LocalFileSource).
//
// Thread safety: as PackStore.
#ifndef FEEDLINE_SRC_STORAGE_LOCAL_PACK_STORE_H_
#define FEEDLINE_SRC_STORAGE_LOCAL_PACK_STORE_H_

#include <string>
#include <vector>

#include "src/storage/pack_store.h"
#include "src/storage/shard_files.h"

namespace feedline::storage {

class LocalPackStore : public PackStore {
 public:
  LocalPackStore(std::vector<std::string> tars, size_t max_open, SourceWrap wrap = {});

  size_t max_open() const override { return files_.max_open(); }
  size_t open_count() const override { return files_.open_count(); }

 protected:
  std::unique_ptr<ByteSource> OpenFile(const std::string& location) const override;

 private:
  mutable ShardFiles files_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_LOCAL_PACK_STORE_H_
