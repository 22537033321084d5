// The open descriptors of a dataset's shard files: one per shard, opened on
// first use and kept open (never an open and close per sample), at most
// `max_open` at once (the least recently used unpinned one is closed to make
// room), and reopened in a forked child.
//
// Why reopen after fork: a descriptor inherited across fork shares its open
// file description with the parent, and with it the kernel's readahead state
// (struct file's f_ra), so worker processes streaming different shards
// through copies of one description disturb each other's readahead; the
// child also has its own LRU. A pthread_atfork handler holds every instance's
// mutex across fork (so a child never inherits it locked mid-update) and
// marks the instances; the child's first Acquire closes its inherited copies
// and opens what it reads itself.
//
// Files unlinked under it (a cache evicting, or replacing a damaged copy):
// a descriptor kept open keeps its file's blocks on disk, so given a count
// that grows whenever one of the files may have been unlinked (`unlinks`,
// ShardCache's, shared by the node's processes), the instance looks at it on
// every Acquire and release (a load from shared memory) and, when it has
// changed, closes the descriptors whose file is gone (fstat: st_nlink 0) as
// soon as they are unpinned; the next Acquire opens the path anew. Without
// it (local files) nothing is checked.
//
// Thread safety: Acquire and the handles may be used from many threads.
// A pinned descriptor (a live Handle) is never closed; when every open one is
// pinned, Acquire opens one more than max_open rather than wait.
#ifndef FEEDLINE_SRC_STORAGE_SHARD_FILES_H_
#define FEEDLINE_SRC_STORAGE_SHARD_FILES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace feedline::storage {

class ShardFiles {
 public:
  // The default bound: 256, or a quarter of the process's descriptor limit
  // if that is lower (at least 1).
  static size_t DefaultMaxOpen();

  // `max_open` 0: DefaultMaxOpen(). `unlinks`: the count above (empty: none).
  explicit ShardFiles(std::vector<std::string> paths, size_t max_open = 0,
                      std::function<uint64_t()> unlinks = {});
  ~ShardFiles();
  ShardFiles(const ShardFiles&) = delete;
  ShardFiles& operator=(const ShardFiles&) = delete;

  // A pinned descriptor of one shard, released on destruction.
  class Handle {
   public:
    Handle() = default;
    Handle(Handle&& other) noexcept { *this = std::move(other); }
    Handle& operator=(Handle&& other) noexcept;
    ~Handle() { Release(); }
    int fd() const { return fd_; }

   private:
    friend class ShardFiles;
    Handle(ShardFiles* owner, size_t shard, int fd, uint64_t generation)
        : owner_(owner), shard_(shard), fd_(fd), generation_(generation) {}
    void Release();
    ShardFiles* owner_ = nullptr;
    size_t shard_ = 0;
    int fd_ = -1;
    uint64_t generation_ = 0;
  };

  // The descriptor of shard `shard`, opened (O_RDONLY | O_CLOEXEC) if it is
  // not open. Throws Error("PATH: cannot open shard: ...") on failure.
  Handle Acquire(size_t shard);

  // Closes the descriptors of unlinked files if the count has changed since
  // it was last looked at: for a process that holds descriptors but reads
  // nothing for a while (a loader's parent while its worker processes read).
  void CheckUnlinks();
  // Closes every unpinned descriptor now: for a thread about to wait (a
  // download), so that files evicted meanwhile by other processes are not
  // kept on disk by this one. They reopen on their next Acquire.
  void CloseUnpinned();
  // Closes now the unpinned descriptors whose file is unlinked (pinned ones:
  // once unpinned), whatever the count says: for the process that unlinked
  // them.
  void CloseUnlinked();

  size_t max_open() const { return max_open_; }
  // Descriptors open now (those of unlinked files still pinned included).
  size_t open_count() const;
  const std::string& path(size_t shard) const { return paths_[shard]; }
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  struct Entry {
    int fd = -1;
    int pins = 0;
    std::list<size_t>::iterator lru;  // valid while fd >= 0
  };
  static void PrepareFork();
  static void ParentAfterFork();
  static void ChildAfterFork();

  void Unpin(size_t shard, int fd, uint64_t generation);
  void DropInheritedLocked();
  void CloseLeastRecentlyUsedLocked();
  // CloseUnlinkedLocked if the count of unlinks has changed since it last ran.
  void CheckUnlinksLocked();
  void CloseUnlinkedLocked();

  const std::vector<std::string> paths_;
  const size_t max_open_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::list<size_t> lru_;  // open shards, most recently used first
  size_t open_ = 0;
  bool forked_ = false;  // set in a child by the fork handler
  uint64_t generation_ = 0;  // counts the resets after fork
  const std::function<uint64_t()> unlinks_;
  uint64_t seen_unlinks_ = 0;
  // Descriptors of unlinked files taken from their entries while pinned:
  // descriptor -> pins; closed at the last unpin.
  std::map<int, int> unlinked_;
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_SHARD_FILES_H_
