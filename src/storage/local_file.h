// LocalFile: a file descriptor that closes itself, and whole reads and
// writes at an offset that name the file when they fail: what the shard
// cache and the parted download need of the local disk. Each is a file
// being written (a download), which a worker process forked while it is
// open closes at once (src/core/inherited_fds.h): held by a worker, its
// blocks would outlive the parent's unlink of it.
//
// Thread safety: ReadAt and WriteAt may be called from many threads at once
// (pread / pwrite); the object itself is not shared while it is moved.
#ifndef FEEDLINE_SRC_STORAGE_LOCAL_FILE_H_
#define FEEDLINE_SRC_STORAGE_LOCAL_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace feedline::storage {

class LocalFile {
 public:
  // Opens `path` read-write, created (mode 0644) if missing; `truncate`
  // empties it. Throws Error naming the path and the reason.
  static LocalFile OpenForWriting(const std::string& path, bool truncate = false);

  ~LocalFile();
  LocalFile(LocalFile&& other) noexcept;
  LocalFile& operator=(LocalFile&&) = delete;
  LocalFile(const LocalFile&) = delete;
  LocalFile& operator=(const LocalFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Its length now. Throws Error naming the path.
  uint64_t Size() const;
  // Writes all `size` bytes at `offset`. Throws Error naming the path.
  void WriteAt(const void* data, size_t size, uint64_t offset) const;
  // Reads exactly `size` bytes at `offset`; a file that ends first is an
  // Error naming the path ("ends early"), as is a failed read.
  void ReadAt(void* data, size_t size, uint64_t offset) const;
  // Cuts it to `size` bytes; fsyncs it. Throw Error naming the path.
  void Truncate(uint64_t size) const;
  void Sync() const;

 private:
  LocalFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Reads exactly `size` bytes of descriptor `fd` at `offset`, retrying
// short reads; a file that ends first ("PATH: ends early") or a failed read
// throws Error naming `path`.
void ReadFully(int fd, void* data, size_t size, uint64_t offset, const std::string& path);

// "PATH: WHAT: strerror(errno)", the message of a failed system call.
std::string ErrnoMessage(const std::string& what, const std::string& path);

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_LOCAL_FILE_H_
