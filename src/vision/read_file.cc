#include "feedline/vision/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>

#include "feedline/error.h"
#include "feedline/vision/decode.h"

namespace feedline::vision {
namespace {

[[noreturn]] void Fail(const char* path, const char* what, int error) {
  throw SampleError(FailureKind::kIo, path, std::string(what) + ": " + std::strerror(error));
}

[[noreturn]] void FailNotRegular(const char* path, unsigned mode) {
  throw SampleError(FailureKind::kIo, path, std::string("is ") + FileTypeName(mode) + ", not a regular file");
}

[[noreturn]] void FailTooLarge(const char* path, uint64_t size, int64_t limit) {
  throw SampleError(FailureKind::kTooLarge, path,
                    "file is " + std::to_string(size) + " bytes, over the limit of " +
                        std::to_string(limit) + " bytes (max_file_bytes)");
}

// Closes the descriptor on every path out.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opening a socket fails with ENXIO, which strerror words as "No such device
// or address"; the file's type says what is wrong.
[[noreturn]] void FailOpen(const char* path, int error) {
  struct stat st;
  if (error == ENXIO && ::stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    FailNotRegular(path, st.st_mode);
  }
  Fail(path, "cannot open", error);
}

// Reads up to `want` bytes at bytes[*size], retrying on EINTR; false at end
// of file.
bool ReadSome(int fd, const char* path, std::vector<uint8_t>& bytes, size_t* size, size_t want) {
  while (true) {
    const ssize_t n = ::read(fd, bytes.data() + *size, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail(path, "cannot read", errno);
    }
    *size += static_cast<size_t>(n);
    return n > 0;
  }
}

// Enough for every signature DetectFormat knows (WebP's is 12 bytes).
constexpr size_t kSignatureBytes = 12;

}  // namespace

const char* FileTypeName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
  }
  return "an unknown file type";
}

void ReadFile(const char* path, std::vector<uint8_t>& bytes, const ReadOptions& options) {
  if (options.max_bytes <= 0) {
    throw Error("ReadFile: max_bytes must be > 0, got " + std::to_string(options.max_bytes));
  }
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait for one
  // forever. It changes nothing for the regular files that are read below.
  FileDescriptor fd(::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) FailOpen(path, errno);
  // The opened descriptor, not the path, is checked: what is read is what
  // was checked, even if the path is swapped meanwhile.
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) Fail(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) FailNotRegular(path, st.st_mode);
  const uint64_t reported = st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
  const uint64_t limit = static_cast<uint64_t>(options.max_bytes);
  if (reported > limit) FailTooLarge(path, reported, options.max_bytes);

  size_t size = 0;
  if (options.image) {
    // The signature first: a large file that is no image costs a few bytes.
    bytes.resize(kSignatureBytes);
    while (size < kSignatureBytes &&
           ReadSome(fd.get(), path, bytes, &size, kSignatureBytes - size)) {
    }
    CheckImageSignature(std::span<const uint8_t>(bytes.data(), size), path);
    if (size < kSignatureBytes) {  // the whole file
      bytes.resize(size);
      return;
    }
  }
  if (reported > 0 && size == reported) {
    bytes.resize(size);
    return;
  }
  // Regular files report their size; read until end of file anyway, in case
  // it changed (files in /proc report 0), but never past the limit.
  size_t capacity = std::max<size_t>(size + 4096, static_cast<size_t>(std::min(reported, limit)));
  bytes.resize(capacity);
  while (true) {
    if (size == capacity) {
      if (size > limit) FailTooLarge(path, size, options.max_bytes);
      capacity = static_cast<size_t>(std::min<uint64_t>(uint64_t{capacity} * 2, limit + 1));
      bytes.resize(capacity);
    }
    if (!ReadSome(fd.get(), path, bytes, &size, capacity - size)) break;
    // A regular file is complete when its reported size has been read.
    if (size == reported) break;
  }
  if (size > limit) FailTooLarge(path, size, options.max_bytes);
  bytes.resize(size);
}

}  // namespace feedline::vision
