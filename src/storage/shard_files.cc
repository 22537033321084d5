#include "src/storage/shard_files.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
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

ShardFiles::ShardFiles(std::vector<std::string> paths, size_t max_open)
    : paths_(std::move(paths)),
      max_open_(max_open == 0 ? DefaultMaxOpen() : max_open),
      entries_(paths_.size()) {
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
}

size_t ShardFiles::open_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

// In a child: the descriptors are copies of the parent's (same open file
// descriptions); pins belonged to the parent's threads, which the child does
// not have.
void ShardFiles::DropInheritedLocked() {
  for (Entry& e : entries_) {
    if (e.fd >= 0) ::close(e.fd);
    e = Entry{};
  }
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

void ShardFiles::Unpin(size_t shard, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A handle from before a fork, released in the child: nothing of it is
  // left to unpin.
  if (forked_ || generation != generation_) return;
  Entry& e = entries_[shard];
  if (e.pins > 0) --e.pins;
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
  if (owner_ != nullptr) owner_->Unpin(shard_, generation_);
  owner_ = nullptr;
  fd_ = -1;
}

}  // namespace feedline::storage
