#include "src/storage/local_file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "feedline/error.h"
#include "src/storage/local_file.h"

namespace feedline::storage {
namespace {

// Closes a descriptor when the call ends, thrown out of or not.
struct ClosedOnExit {
  int fd;
  ~ClosedOnExit() { ::close(fd); }
};

}  // namespace

std::optional<uint64_t> LocalFileSize(const std::string& path, std::string* missing) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT) {
      if (missing != nullptr) *missing = std::strerror(ENOENT);
      return std::nullopt;
    }
    throw OsError(error, path, ErrnoMessage("cannot stat", path));
  }
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

std::optional<uint64_t> LocalFileSource::Size(std::string* missing) const {
  return LocalFileSize(path_, missing);
}

int LocalFileSource::Open() const {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw OsError(error, path_, path_ + ": cannot open: " + std::strerror(error));
  }
  return fd;
}

void LocalFileSource::ReadRange(uint64_t offset, size_t size, uint8_t* dst) const {
  if (size == 0) return;
  const ClosedOnExit file{Open()};
  ReadFully(file.fd, dst, size, offset, path_);
}

void LocalFileSource::Stream(uint64_t offset, uint64_t size, const Sink& sink) const {
  if (size == 0) return;
  const ClosedOnExit file{Open()};
  std::vector<uint8_t> piece(static_cast<size_t>(std::min<uint64_t>(size, kStreamPiece)));
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kStreamPiece));
    ReadFully(file.fd, piece.data(), n, offset + done, path_);
    sink(piece.data(), n);
    done += n;
  }
}

void LocalFileSource::ThrowMissing(const std::string& path, const std::string& message) const {
  throw OsError(ENOENT, path, message);
}

}  // namespace feedline::storage
