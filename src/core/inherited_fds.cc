#include "src/core/inherited_fds.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

namespace feedline::internal {
namespace {

// Leaked on purpose: a child may still read it while the parent exits.
std::mutex& RegistryMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::vector<int>& Registry() {
  static auto* fds = new std::vector<int>;
  return *fds;
}

}  // namespace

void RegisterInheritedFd(int fd) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().push_back(fd);
}

void UnregisterInheritedFd(int fd) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto& fds = Registry();
  fds.erase(std::remove(fds.begin(), fds.end(), fd), fds.end());
}

void CloseInheritedFdsExcept(std::initializer_list<int> keep) {
  for (int fd : Registry()) {
    if (std::find(keep.begin(), keep.end(), fd) == keep.end()) ::close(fd);
  }
  Registry().clear();
}

InheritedFdsForkLock::InheritedFdsForkLock() : lock_(RegistryMutex()) {}
InheritedFdsForkLock::~InheritedFdsForkLock() = default;

}  // namespace feedline::internal
