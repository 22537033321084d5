// The registry of descriptors a forked worker process must not keep.
//
// A worker is forked from a running, multi-threaded program and inherits
// every descriptor of it. Some must be closed in the child at once:
// - another worker's socket or arena: held open by a sibling, a dead
//   worker's socket never reads as closed in the parent;
// - a shard the parent is downloading into the node cache (a `.part` file):
//   held by a worker for its whole life, the file's blocks stay on disk
//   after the parent renames, evicts and unlinks it, so the cache's disk
//   bound no longer holds (docs/storage.md).
// Whoever opens such a descriptor registers it, and unregisters it before
// closing it (so that a descriptor number reused by another open is never
// closed in a child); ProcessSpawner holds InheritedFdsForkLock across
// fork, so the child's copy of the registry is complete, and the child
// calls CloseInheritedFdsExcept with its own descriptors.
//
// Thread safety: Register/Unregister from any thread. CloseInheritedFdsExcept
// only in a freshly forked child (single-threaded; it takes no lock).
#ifndef FEEDLINE_SRC_CORE_INHERITED_FDS_H_
#define FEEDLINE_SRC_CORE_INHERITED_FDS_H_

#include <initializer_list>
#include <mutex>

namespace feedline::internal {

void RegisterInheritedFd(int fd);
void UnregisterInheritedFd(int fd);
// In a freshly forked child: closes every registered descriptor except `keep`,
// and empties the registry.
void CloseInheritedFdsExcept(std::initializer_list<int> keep);

// Held across fork(): no registration is half done in the child's copy.
class InheritedFdsForkLock {
 public:
  InheritedFdsForkLock();
  ~InheritedFdsForkLock();
  InheritedFdsForkLock(const InheritedFdsForkLock&) = delete;
  InheritedFdsForkLock& operator=(const InheritedFdsForkLock&) = delete;

 private:
  std::lock_guard<std::mutex> lock_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_CORE_INHERITED_FDS_H_
