#include "src/process/shared_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::internal {
namespace {

std::string Errno(int err) { return std::strerror(err); }

char* MapFile(int fd, size_t bytes, std::string* error) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *error = "mmap of " + std::to_string(bytes) + " bytes failed: " + Errno(errno);
    return nullptr;
  }
  return static_cast<char*>(p);
}

}  // namespace

SharedArena SharedArena::Create(const char* name, size_t bytes) {
  SharedArena arena;
  arena.fd_ = ::memfd_create(name, MFD_CLOEXEC);
  if (arena.fd_ < 0) {
    throw Error(std::string("memfd_create for the worker's shared memory failed: ") +
                Errno(errno));
  }
  arena.owns_fd_ = true;
  std::string error;
  if (!arena.Reserve(bytes, &error)) {
    throw Error("cannot make " + std::to_string(bytes >> 20) +
                " MB of shared memory for a worker process: " + error +
                " (use_shared_memory=False sends samples through a socket instead)");
  }
  return arena;
}

SharedArena SharedArena::Attach(int fd) {
  SharedArena arena;
  arena.fd_ = fd;
  struct stat st;
  if (::fstat(fd, &st) != 0) throw Error("fstat of the shared arena failed: " + Errno(errno));
  std::string error;
  arena.size_ = static_cast<size_t>(st.st_size);
  if (arena.size_ > 0) {
    arena.data_ = MapFile(fd, arena.size_, &error);
    if (arena.data_ == nullptr) throw Error(error);
  }
  return arena;
}

SharedArena::SharedArena(SharedArena&& other) noexcept { *this = std::move(other); }

SharedArena& SharedArena::operator=(SharedArena&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = std::exchange(other.fd_, -1);
    owns_fd_ = std::exchange(other.owns_fd_, false);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedArena::~SharedArena() { Release(); }

void SharedArena::Release() {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

bool SharedArena::Reserve(size_t bytes, std::string* error) {
  if (bytes <= size_) return true;
  // posix_fallocate commits the pages now: memory that is not there is
  // ENOSPC/ENOMEM here rather than a SIGBUS when a page is first written.
  int err = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    *error = "posix_fallocate of " + std::to_string(bytes) + " bytes failed: " + Errno(err);
    return false;
  }
  char* mapped = MapFile(fd_, bytes, error);
  if (mapped == nullptr) return false;
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = mapped;
  size_ = bytes;
  return true;
}

void SharedArena::MapAtLeast(size_t bytes) {
  if (bytes <= size_) return;
  struct stat st;
  if (::fstat(fd_, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    throw Error("the worker's shared arena is shorter than the worker says (" +
                std::to_string(bytes) + " bytes)");
  }
  std::string error;
  char* mapped = MapFile(fd_, bytes, &error);
  if (mapped == nullptr) throw Error(error);
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = mapped;
  size_ = bytes;
}

}  // namespace feedline::internal
