#include "src/storage/local_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "feedline/error.h"
#include "src/core/inherited_fds.h"

namespace feedline::storage {

std::string ErrnoMessage(const std::string& what, const std::string& path) {
  return path + ": " + what + ": " + std::strerror(errno);
}

LocalFile LocalFile::OpenForWriting(const std::string& path, bool truncate) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0),
                        0644);
  if (fd < 0) throw Error(ErrnoMessage("cannot open", path));
  // A download in progress: a worker process forked now closes its copy.
  internal::RegisterInheritedFd(fd);
  return LocalFile(fd, path);
}

LocalFile::~LocalFile() {
  if (fd_ < 0) return;
  internal::UnregisterInheritedFd(fd_);  // before the number can be reused
  ::close(fd_);
}

LocalFile::LocalFile(LocalFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

uint64_t LocalFile::Size() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) throw Error(ErrnoMessage("cannot stat", path_));
  return static_cast<uint64_t>(st.st_size);
}

void LocalFile::WriteAt(const void* data, size_t size, uint64_t offset) const {
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd_, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrnoMessage("cannot write", path_));
    done += static_cast<size_t>(n);
  }
}

void LocalFile::ReadAt(void* data, size_t size, uint64_t offset) const {
  ReadFully(fd_, data, size, offset, path_);
}

void ReadFully(int fd, void* data, size_t size, uint64_t offset, const std::string& path) {
  auto* bytes = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(ErrnoMessage("cannot read", path));
    if (n == 0) throw Error(path + ": ends early");
    done += static_cast<size_t>(n);
  }
}

void LocalFile::Truncate(uint64_t size) const {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    throw Error(ErrnoMessage("cannot truncate", path_));
  }
}

void LocalFile::Sync() const {
  if (::fsync(fd_) != 0) throw Error(ErrnoMessage("cannot fsync", path_));
}

}  // namespace feedline::storage
