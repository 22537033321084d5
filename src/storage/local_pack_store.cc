#include "src/storage/local_pack_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "feedline/error.h"
#include "src/storage/tar_indexer.h"

namespace feedline::storage {

LocalPackStore::LocalPackStore(std::vector<std::string> tars, size_t max_open)
    : files_(std::move(tars), max_open) {}

std::optional<std::string> LocalPackStore::ReadText(const std::string& location) const {
  std::error_code ec;
  if (!std::filesystem::exists(location, ec)) return std::nullopt;
  std::ifstream in(location);
  if (!in) throw Error(location + ": cannot read: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<ShardIndex> LocalPackStore::ReadIndex(const std::string& location) const {
  struct stat st;
  if (::stat(location.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  return ReadShardIndex(location);
}

ShardIndex LocalPackStore::IndexTar(size_t shard, const std::string& index_location) const {
  const std::string& tar_path = files_.path(shard);
  struct stat st;
  if (::stat(tar_path.c_str(), &st) != 0 && errno == ENOENT) {
    throw OsError(ENOENT, index_location,
                  index_location + ": cannot open shard index: " + std::strerror(ENOENT) +
                      " (nor is " + tar_path + " there to index)");
  }
  return IndexTarFile(tar_path);
}

void LocalPackStore::CheckTar(size_t shard, uint64_t bytes) const {
  // Checked without keeping it open: with thousands of shards only the ones
  // being read hold a descriptor.
  const std::string& tar_path = files_.path(shard);
  struct stat st;
  if (::stat(tar_path.c_str(), &st) != 0) {
    const int error = errno;
    throw OsError(error, tar_path, tar_path + ": cannot open shard: " + std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) throw Error(tar_path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) < bytes) {
    throw Error(tar_path + ": truncated shard: " + std::to_string(st.st_size) +
                " bytes, its index expects " + std::to_string(bytes));
  }
}

void LocalPackStore::ReadRange(size_t shard, uint64_t offset, size_t size, uint8_t* dst) const {
  const ShardFiles::Handle file = files_.Acquire(shard);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(file.fd(), dst + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) throw Error("shard ends early (truncated since it was opened)");
    done += static_cast<size_t>(n);
  }
}

}  // namespace feedline::storage
