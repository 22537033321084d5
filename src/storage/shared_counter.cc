#include "src/storage/shared_counter.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "feedline/error.h"
#include "src/storage/local_file.h"

namespace feedline::storage {

SharedCounter::SharedCounter(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(ErrnoMessage("cannot open counter file", path));
  struct stat st;
  // Extending to 8 bytes is idempotent: a process that extends it after
  // another has counted keeps that count (ftruncate to the same size writes
  // nothing).
  if (::fstat(fd, &st) != 0 || (st.st_size < 8 && ::ftruncate(fd, 8) != 0)) {
    const std::string message = ErrnoMessage("cannot size counter file", path);
    ::close(fd);
    throw Error(message);
  }
  void* map = ::mmap(nullptr, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (map == MAP_FAILED) throw Error(ErrnoMessage("cannot map counter file", path));
  word_ = static_cast<uint64_t*>(map);
}

SharedCounter::~SharedCounter() { ::munmap(word_, 8); }

uint64_t SharedCounter::value() const {
  return std::atomic_ref<uint64_t>(*word_).load(std::memory_order_acquire);
}

void SharedCounter::Increment() const {
  std::atomic_ref<uint64_t>(*word_).fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace feedline::storage
