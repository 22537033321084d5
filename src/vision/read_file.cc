#include "feedline/vision/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "feedline/error.h"

namespace feedline::vision {
namespace {

[[noreturn]] void Fail(const char* path, const char* what, int error) {
  throw SampleError("io", path, std::string(what) + ": " + std::strerror(error));
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

}  // namespace

void ReadFile(const char* path, std::vector<uint8_t>& bytes) {
  FileDescriptor fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) Fail(path, "cannot open", errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) Fail(path, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) Fail(path, "cannot read", EISDIR);
  // Regular files report their size; read until end of file anyway, in case
  // it changed or is a pipe.
  size_t size = 0;
  size_t capacity = st.st_size > 0 ? static_cast<size_t>(st.st_size) : 4096;
  bytes.resize(capacity);
  while (true) {
    if (size == capacity) {
      capacity *= 2;
      bytes.resize(capacity);
    }
    const ssize_t n = ::read(fd.get(), bytes.data() + size, capacity - size);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail(path, "cannot read", errno);
    }
    if (n == 0) break;
    size += static_cast<size_t>(n);
    // A regular file is complete when its reported size has been read.
    if (S_ISREG(st.st_mode) && size == static_cast<size_t>(st.st_size)) break;
  }
  bytes.resize(size);
}

}  // namespace feedline::vision
