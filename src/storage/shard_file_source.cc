#include "src/storage/shard_file_source.h"

#include <cerrno>

#include "feedline/error.h"
#include "src/storage/local_file.h"
#include "src/storage/local_file_source.h"

namespace feedline::storage {

std::optional<uint64_t> ShardFileSource::Size(std::string* missing) const {
  return LocalFileSize(name(), missing);
}

void ShardFileSource::ReadRange(uint64_t offset, size_t size, uint8_t* dst) const {
  ReadPinned(offset, size, dst);
}

ShardFiles::Handle ShardFileSource::ReadPinned(uint64_t offset, size_t size,
                                               uint8_t* dst) const {
  ShardFiles::Handle file = files_->Acquire(shard_);
  ReadFully(file.fd(), dst, size, offset, name());
  return file;
}

void ShardFileSource::ThrowMissing(const std::string& path, const std::string& message) const {
  throw OsError(ENOENT, path, message);
}

}  // namespace feedline::storage
