#include "src/process/shared_slot_allocator.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "feedline/error.h"
#include "src/core/inherited_fds.h"
#include "src/loader/tuner_resources.h"
#include "src/process/process_spawner.h"

namespace feedline::internal {
namespace {

constexpr size_t kPage = 4096;  // fallocate and hole punching work in pages
constexpr size_t kReserveGranule = size_t{64} << 20;
constexpr size_t kMinReserve = size_t{256} << 20;
// The share of the address space left under RLIMIT_AS one loader reserves:
// the training job's own arrays and several loaders must still fit.
constexpr size_t kAddressSpaceShare = 4;  // a quarter

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string Errno(int err) { return std::strerror(err); }

std::string Megabytes(size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MB"; }

size_t PhysicalMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return size_t{4} << 30;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}

// Address space this process may still map under RLIMIT_AS (ulimit -v), or
// SIZE_MAX without a limit.
size_t AddressSpaceLeft() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  size_t used = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long pages = 0;
    if (std::fscanf(f, "%lu", &pages) == 1) used = pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::fclose(f);
  }
  const size_t cap = static_cast<size_t>(limit.rlim_cur);
  return cap > used ? cap - used : 0;
}

}  // namespace

size_t SharedSlotAllocator::DefaultReservation() {
  const int64_t budget = DetectTunerResources().memory_budget_bytes;
  size_t bytes = budget > 0 ? static_cast<size_t>(budget) : PhysicalMemory();
  const size_t left = AddressSpaceLeft();
  if (left != SIZE_MAX) bytes = std::min(bytes, left / kAddressSpaceShare);
  return std::max(kMinReserve, RoundUp(bytes, kReserveGranule));
}

SharedSlotAllocator::SharedSlotAllocator(size_t reserve_bytes) {
  reserved_ = RoundUp(reserve_bytes > 0 ? reserve_bytes : DefaultReservation(), kPage);
  fd_ = ::memfd_create("feedline-slots", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) {
    throw Error("memfd_create for the batch slots' shared memory failed: " + Errno(errno) +
                " (use_shared_memory=False keeps the slots in the loader's own memory)");
  }
  // Sparse: only what Allocate commits takes memory.
  if (::ftruncate(fd_, static_cast<off_t>(reserved_)) != 0) {
    const int err = errno;
    ::close(fd_);
    throw Error("sizing the batch slots' shared memory file to " + Megabytes(reserved_) +
                " failed: " + Errno(err));
  }
  // No process may shrink the file under another's mapping (a SIGBUS).
  ::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void* p = ::mmap(nullptr, reserved_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd_);
    throw Error("mapping " + Megabytes(reserved_) +
                " of address space for the batch slots' shared memory failed: " + Errno(err));
  }
  base_ = static_cast<std::byte*>(p);
  // Worker processes use the inherited mapping, not the descriptor: they close it.
  RegisterInheritedFd(fd_);
}

SharedSlotAllocator::~SharedSlotAllocator() {
  ::munmap(base_, reserved_);
  UnregisterInheritedFd(fd_);
  ::close(fd_);
}

int64_t SharedSlotAllocator::OffsetOf(const void* p) const {
  const auto* b = static_cast<const std::byte*>(p);
  if (b < base_ || b >= base_ + reserved_) return -1;
  return b - base_;
}

SlotBlock SharedSlotAllocator::DoAllocate(size_t bytes) {
  const size_t size = RoundUp(bytes, kPage);
  size_t offset = 0;
  {
    MutexLock lock(&mu_);
    auto it = free_.begin();
    while (it != free_.end() && it->second < size) ++it;
    if (it != free_.end()) {
      offset = it->first;
      const size_t left = it->second - size;
      free_.erase(it);
      if (left > 0) free_.emplace(offset + size, left);
    } else {
      if (size > reserved_ - end_) {
        // Past the reservation: a heap block. The workers cannot see it, so
        // its rows come back through their arenas (one copy more).
        heap_blocks_.fetch_add(1, std::memory_order_relaxed);
        return heap_.Allocate(bytes);
      }
      offset = end_;
      end_ += size;
    }
  }
  // Commit the pages now: memory that is not there is an error here, not a
  // SIGBUS or an OOM kill when a worker first writes the row.
  if (::fallocate(fd_, 0, static_cast<off_t>(offset), static_cast<off_t>(size)) != 0) {
    const int err = errno;
    DoFree(SlotBlock{base_ + offset, size, offset});
    throw Error("cannot commit " + Megabytes(size) +
                " of shared memory for a batch slot: " + Errno(err) +
                "; lower batch_size or prefetch_factor, or raise the memory limit");
  }
  return SlotBlock{base_ + offset, size, offset};
}

void SharedSlotAllocator::DoFree(const SlotBlock& block) noexcept {
  if (OffsetOf(block.data) < 0) {  // a heap block (past the reservation)
    heap_.Free(block);
    return;
  }
  // The pages go back to the system (in every process that mapped them).
  ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(block.handle),
              static_cast<off_t>(block.bytes));
  MutexLock lock(&mu_);
  size_t offset = block.handle;
  size_t size = block.bytes;
  auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    free_.erase(next);
  }
  if (offset + size == end_) {
    end_ = offset;
  } else {
    free_.emplace(offset, size);
  }
}

}  // namespace feedline::internal
