// SharedArena: an anonymous shared-memory file (memfd_create) mapped into a
// loader process and its worker process, through which a worker hands over
// a sample's arrays without copying them through a pipe.
//
// memfd rather than /dev/shm: the file has no name, so nothing can be left
// behind by any ending (it disappears with the last descriptor and mapping),
// and it is not bound by the size of /dev/shm (64 MB in a default Docker
// container). Its pages are committed with posix_fallocate, so a shortage of
// memory is an error at that point, never a SIGBUS on a later write.
//
// Thread safety: one thread uses an arena at a time (a worker slot's thread
// in the parent, the worker loop in the child).
#ifndef FEEDLINE_SRC_PROCESS_SHARED_ARENA_H_
#define FEEDLINE_SRC_PROCESS_SHARED_ARENA_H_

#include <cstddef>
#include <string>

namespace feedline::internal {

class SharedArena {
 public:
  // Creates a memfd of `bytes` (committed). Throws Error naming the reason.
  static SharedArena Create(const char* name, size_t bytes);
  // Maps an existing arena file by descriptor (the worker's inherited copy);
  // does not take ownership of `fd`.
  static SharedArena Attach(int fd);

  SharedArena() = default;
  SharedArena(SharedArena&& other) noexcept;
  SharedArena& operator=(SharedArena&& other) noexcept;
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;
  ~SharedArena();

  // Grows the file to at least `bytes` (committing the pages) and maps it all.
  // Returns false with `*error` set if memory ran short; the arena is unchanged.
  bool Reserve(size_t bytes, std::string* error);
  // Maps at least `bytes` of the file, which the other process grew.
  // Throws Error if the file is shorter.
  void MapAtLeast(size_t bytes);

  int fd() const { return fd_; }
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();

  int fd_ = -1;
  bool owns_fd_ = false;
  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_SHARED_ARENA_H_
