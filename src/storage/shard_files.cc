#include "src/storage/shard_files.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

// Every live ShardFiles, for the fork handlers. Leaked on purpose: the
// handlers may run during exit.
std::mutex& RegistryMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::set<ShardFiles*>& Registry() {
  static auto* registry = new std::set<ShardFiles*>;
  return *registry;
}

}  // namespace

size_t ShardFiles::DefaultMaxOpen() {
  size_t bound = 256;
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    bound = std::min<size_t>(bound, std::max<size_t>(1, limit.rlim_cur / 4));
  }
  return bound;
}

void ShardFiles::PrepareFork() {
  RegistryMutex().lock();
  for (ShardFiles* files : Registry()) files->mutex_.lock();
}

void ShardFiles::ParentAfterFork() {
  for (ShardFiles* files : Registry()) files->mutex_.unlock();
  RegistryMutex().unlock();
}

void ShardFiles::ChildAfterFork() {
  for (ShardFiles* files : Registry()) {
    files->forked_ = true;
    files->mutex_.unlock();
  }
  RegistryMutex().unlock();
}

ShardFiles::ShardFiles(std::vector<std::string> paths, size_t max_open,
                       std::function<uint64_t()> unlinks)
    : paths_(std::move(paths)),
      max_open_(max_open == 0 ? DefaultMaxOpen() : max_open),
      entries_(paths_.size()),
      unlinks_(std::move(unlinks)) {
  if (unlinks_) seen_unlinks_ = unlinks_();
  static std::once_flag handlers;
  std::call_once(handlers, [] { ::pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork); });
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().insert(this);
}

ShardFiles::~ShardFiles() {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().erase(this);
  }
  for (Entry& e : entries_) {
    if (e.fd >= 0) ::close(e.fd);
  }
  for (const auto& [fd, pins] : unlinked_) ::close(fd);
}

size_t ShardFiles::open_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_ + unlinked_.size();
}

void ShardFiles::CloseUnlinked() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (forked_) return;  // the child's first Acquire drops them all
  CloseUnlinkedLocked();
}

void ShardFiles::CloseUnpinned() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (forked_) return;
  while (!lru_.empty()) {
    const size_t before = open_;
    CloseLeastRecentlyUsedLocked();
    if (open_ == before) break;  // the rest are pinned
  }
}

void ShardFiles::CheckUnlinks() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!forked_) CheckUnlinksLocked();
}

void ShardFiles::CheckUnlinksLocked() {
  if (!unlinks_) return;
  // The count grows after the unlink: a changed count read here means that
  // fstat below sees the file gone.
  const uint64_t now = unlinks_();
  if (now == seen_unlinks_) return;
  seen_unlinks_ = now;
  CloseUnlinkedLocked();
}

// One fstat per open descriptor, only when something was unlinked: the
// cost of a record's read stays one load of the shared count.
void ShardFiles::CloseUnlinkedLocked() {
  for (auto it = lru_.begin(); it != lru_.end();) {
    Entry& e = entries_[*it];
    struct stat st;
    if (::fstat(e.fd, &st) != 0 || st.st_nlink > 0) {
      ++it;
      continue;
    }
    if (e.pins == 0) {
      ::close(e.fd);
    } else {
      unlinked_[e.fd] = e.pins;
    }
    e = Entry{};
    it = lru_.erase(it);
    --open_;
  }
}

// In a child: the descriptors are copies of the parent's (same open file
// descriptions); pins belonged to the parent's threads, which the child does
// not have.
void ShardFiles::DropInheritedLocked() {
  for (Entry& e : entries_) {
    if (e.fd >= 0) ::close(e.fd);
    e = Entry{};
  }
  for (const auto& [fd, pins] : unlinked_) ::close(fd);
  unlinked_.clear();
  lru_.clear();
  open_ = 0;
  forked_ = false;
  ++generation_;
}

void ShardFiles::CloseLeastRecentlyUsedLocked() {
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    Entry& e = entries_[*it];
    if (e.pins > 0) continue;
    ::close(e.fd);
    e.fd = -1;
    lru_.erase(std::next(it).base());
    --open_;
    return;
  }
}

ShardFiles::Handle ShardFiles::Acquire(size_t shard) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (forked_) DropInheritedLocked();
  CheckUnlinksLocked();
  Entry& e = entries_.at(shard);
  if (e.fd < 0) {
    while (open_ >= max_open_) {
      const size_t before = open_;
      CloseLeastRecentlyUsedLocked();
      if (open_ == before) break;  // all pinned: one more for now
    }
    const int fd = ::open(paths_[shard].c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
      const int error = errno;
      throw OsError(error, paths_[shard],
                    paths_[shard] + ": cannot open shard: " + std::strerror(error));
    }
    e.fd = fd;
    ++open_;
  } else {
    lru_.erase(e.lru);
  }
  lru_.push_front(shard);
  e.lru = lru_.begin();
  ++e.pins;
  return Handle(this, shard, e.fd, generation_);
}

void ShardFiles::Unpin(size_t shard, int fd, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A handle from before a fork, released in the child: nothing of it is
  // left to unpin.
  if (forked_ || generation != generation_) return;
  Entry& e = entries_[shard];
  if (e.fd == fd) {
    if (e.pins > 0) --e.pins;
  } else if (auto it = unlinked_.find(fd); it != unlinked_.end() && --it->second == 0) {
    // A descriptor number is not reused while it is open, so this is the
    // handle's own.
    ::close(fd);
    unlinked_.erase(it);
  }
  CheckUnlinksLocked();
}

ShardFiles::Handle& ShardFiles::Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = other.owner_;
    shard_ = other.shard_;
    fd_ = other.fd_;
    generation_ = other.generation_;
    other.owner_ = nullptr;
    other.fd_ = -1;
  }
  return *this;
}

void ShardFiles::Handle::Release() {
  if (owner_ != nullptr) owner_->Unpin(shard_, fd_, generation_);
  owner_ = nullptr;
  fd_ = -1;
}

}  // namespace feedline::storage
