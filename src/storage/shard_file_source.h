// ShardFileSource: one of a set of local files read again and again (a
// pack's tars, a cache's copies) as a ByteSource, read through the set's
// descriptors that stay open (ShardFiles: bounded, reopened after fork,
// closed once unlinked).
//
// Thread safety: as ByteSource.
#ifndef FEEDLINE_SRC_STORAGE_SHARD_FILE_SOURCE_H_
#define FEEDLINE_SRC_STORAGE_SHARD_FILE_SOURCE_H_

#include <string>

#include "src/storage/byte_source.h"
#include "src/storage/shard_files.h"

namespace feedline::storage {

class ShardFileSource : public ByteSource {
 public:
  // File `shard` of `files`, which outlives the source.
  ShardFileSource(ShardFiles* files, size_t shard) : files_(files), shard_(shard) {}

  const std::string& name() const override { return files_->path(shard_); }
  // A stat: it does not open the file (with thousands of shards only those
  // being read hold a descriptor).
  std::optional<uint64_t> Size(std::string* missing = nullptr) const override;
  // A missing file: OsError ENOENT ("PATH: cannot open shard: ...").
  void ReadRange(uint64_t offset, size_t size, uint8_t* dst) const override;
  [[noreturn]] void ThrowMissing(const std::string& path,
                                 const std::string& message) const override;

  // ReadRange's read, returning the descriptor read, pinned open while the
  // handle lives.
  ShardFiles::Handle ReadPinned(uint64_t offset, size_t size, uint8_t* dst) const;

 private:
  ShardFiles* const files_;
  const size_t shard_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_SHARD_FILE_SOURCE_H_
