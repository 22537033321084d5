// Batch slots in shared memory: the allocator (blocks reused, offsets, a
// block made after a fork visible to the forked process, blocks past the
// reservation from the heap, the default reservation under a ulimit -v),
// and, through the public DataLoader, worker processes writing their rows
// straight into slots that live in the shared file: batches still those of
// thread mode when slots are made after the workers started (a caller that
// keeps every batch) and after a worker was killed, and the restarts counted
// in stats(). Every test is bounded: a loader ends or CTest's timeout ends it.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/feedline.h"
#include "process/child_processes.h"
#include "src/process/shared_slot_allocator.h"

namespace feedline {
namespace {

using internal::SharedSlotAllocator;
using internal::SlotBlock;
using ::testing::HasSubstr;

// The name of the mapping that holds `p` in this process (/proc/self/maps).
std::string MappingOf(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, device, inode, name;
    in >> range >> perms >> offset >> device >> inode;
    std::getline(in >> std::ws, name);
    const size_t dash = range.find('-');
    const uintptr_t begin = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (address >= begin && address < end) return name;
  }
  return "";
}

using testing::KillOneLiveChild;

TEST(SharedSlotAllocator, BlocksAreAlignedReusedAndNamedByOffset) {
  SharedSlotAllocator slots(size_t{64} << 20);
  EXPECT_STREQ(slots.name(), "shared memory");
  SlotBlock a = slots.Allocate(1000);
  SlotBlock b = slots.Allocate(5 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % SharedSlotAllocator::kAlignment, 0u);
  EXPECT_GE(a.bytes, 1000u);
  EXPECT_EQ(slots.OffsetOf(a.data), static_cast<int64_t>(a.handle));
  EXPECT_EQ(slots.OffsetOf(b.data), static_cast<int64_t>(b.handle));
  EXPECT_NE(a.handle, b.handle);
  EXPECT_EQ(slots.OffsetOf(&a), -1);
  EXPECT_EQ(slots.bytes_in_use(), static_cast<int64_t>(a.bytes + b.bytes));
  std::memset(b.data, 0x5a, b.bytes);
  slots.Free(a);
  SlotBlock c = slots.Allocate(500);  // fits where a was
  EXPECT_EQ(c.handle, a.handle);
  slots.Free(b);
  slots.Free(c);
  EXPECT_EQ(slots.bytes_in_use(), 0);
  // Everything freed: the whole reservation is one free range again.
  SlotBlock all = slots.Allocate(size_t{64} << 20);
  EXPECT_EQ(all.handle, 0u);
  slots.Free(all);
  EXPECT_EQ(MappingOf(slots.base()).rfind("/memfd:feedline-slots", 0), 0u) << MappingOf(slots.base());
}

// A block past the reservation comes from the heap (rows written there come
// back through the workers' arenas) instead of failing the loader.
TEST(SharedSlotAllocator, MoreThanTheReservationComesFromTheHeap) {
  SharedSlotAllocator slots(size_t{1} << 30);
  SlotBlock a = slots.Allocate(size_t{600} << 20);
  SlotBlock b = slots.Allocate(size_t{600} << 20);
  EXPECT_GE(slots.OffsetOf(a.data), 0);
  EXPECT_EQ(slots.OffsetOf(b.data), -1);
  EXPECT_EQ(slots.heap_blocks(), 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % SharedSlotAllocator::kAlignment, 0u);
  std::memset(b.data, 7, 4096);  // usable memory
  slots.Free(b);
  slots.Free(a);
  SlotBlock c = slots.Allocate(size_t{600} << 20);  // the reservation is free again
  EXPECT_GE(slots.OffsetOf(c.data), 0);
  slots.Free(c);
}

// Under a ulimit -v the default reservation takes at most a quarter of the
// address space left (before: the machine's RAM, so that a few loaders used
// up a limit the job fit in). Checked in a child, which alone gets the limit.
TEST(SharedSlotAllocator, DefaultReservationLeavesMostOfAnAddressSpaceLimit) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const size_t used = static_cast<size_t>(pages) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t headroom = size_t{8} << 30;
    rlimit limit{used + headroom, used + headroom};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) _exit(2);
    size_t total = 0;
    for (int k = 0; k < 3; ++k) {  // three loaders' allocators, all in shared memory
      auto* slots = new SharedSlotAllocator();  // kept mapped, as live loaders keep them
      total += slots->reserved();
    }
    _exit(total <= headroom - headroom / 4 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: setrlimit failed, 3: the reservations took more "
                                       "than three quarters of the limit; else one threw";
}

// A process forked before a block existed writes into it: the mapping it
// inherited covers the whole reservation (what a restarted or long-lived
// worker relies on for slots made after it started).
TEST(SharedSlotAllocator, ABlockMadeAfterAForkIsSharedWithTheForkedProcess) {
  SharedSlotAllocator slots(size_t{64} << 20);
  int to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    uint64_t offset = 0;
    if (::read(to_child[0], &offset, sizeof(offset)) != sizeof(offset)) _exit(2);
    auto* row = reinterpret_cast<uint32_t*>(slots.base() + offset);
    const uint32_t seen = row[0];
    row[1] = seen + 1;
    const char done = 1;
    if (::write(to_parent[1], &done, 1) != 1) _exit(3);
    _exit(0);
  }
  SlotBlock block = slots.Allocate(8192);
  auto* row = reinterpret_cast<uint32_t*>(block.data);
  row[0] = 41;
  row[1] = 0;
  ASSERT_EQ(::write(to_child[1], &block.handle, sizeof(block.handle)),
            static_cast<ssize_t>(sizeof(block.handle)));
  char done = 0;
  ASSERT_EQ(::read(to_parent[0], &done, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(row[1], 42u);
  slots.Free(block);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) ::close(fd);
}

// Sample i: "pixels" (fixed, 4 KB, written in place) filled from the
// sample's Rng, "index" (fixed), and "tail" (variable length: not bound,
// so it comes back through the worker's arena).
class Pixels : public Dataset {
 public:
  explicit Pixels(int64_t n, std::chrono::microseconds delay = {}) : n_(n), delay_(delay) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    CheckIndex(index, n_);
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    Tensor pixels = out.Allocate("pixels", DType::kU8, Shape{64, 64});
    for (int64_t k = 0; k < 64 * 64; ++k) {
      pixels.data<uint8_t>()[k] = static_cast<uint8_t>(ctx.rng().NextU32());
    }
    out.SetScalar<int64_t>("index", index);
    Tensor tail = out.Allocate("tail", DType::kI32, Shape{index % 3 + 1});
    for (int64_t k = 0; k <= index % 3; ++k) tail.data<int32_t>()[k] = static_cast<int32_t>(index);
  }
  std::vector<FieldSpec> FixedFields() const override {
    return {{"pixels", DType::kU8, Shape{64, 64}}, {"index", DType::kI64, Shape{}}};
  }

 private:
  int64_t n_;
  std::chrono::microseconds delay_;
};

using Bytes = std::vector<std::vector<char>>;

Bytes CopyBytes(const Batch& batch) {
  Bytes out;
  for (int i = 0; i < batch.num_fields(); ++i) {
    const char* p = static_cast<const char*>(batch.field(i).raw());
    out.emplace_back(p, p + batch.field(i).bytes());
  }
  return out;
}

LoaderOptions SharedSlotOptions(WorkerMode mode) {
  LoaderOptions options;
  options.worker_mode = mode;
  options.num_workers = 2;
  options.batch_size = 16;
  options.shuffle = true;
  options.seed = 11;
  return options;
}

std::vector<Bytes> ThreadBatches(std::shared_ptr<const Dataset> dataset) {
  std::vector<Bytes> out;
  DataLoader loader(std::move(dataset), SharedSlotOptions(WorkerMode::kThread));
  for (const Batch& b : loader) out.push_back(CopyBytes(b));
  return out;
}

TEST(SharedSlots, ProcessWorkersFillSlotsInSharedMemoryAsThreadsWould) {
  auto dataset = std::make_shared<Pixels>(150);
  const std::vector<Bytes> reference = ThreadBatches(dataset);
  {
    DataLoader threads(dataset, SharedSlotOptions(WorkerMode::kThread));
    std::optional<Batch> b = threads.Next();
    ASSERT_TRUE(b);
    EXPECT_EQ(MappingOf((*b)["pixels"].raw()).find("feedline-slots"), std::string::npos);
  }
  DataLoader loader(dataset, SharedSlotOptions(WorkerMode::kProcess));
  // A caller that keeps every batch makes the pool create a slot per batch,
  // long after the worker processes started: they write into those too.
  std::vector<Batch> kept;
  for (const Batch& b : loader) kept.push_back(b);
  ASSERT_EQ(kept.size(), reference.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(MappingOf(kept[i]["pixels"].raw()).rfind("/memfd:feedline-slots", 0), 0u);
    EXPECT_TRUE(CopyBytes(kept[i]) == reference[i]) << "batch " << i;
  }
  EXPECT_EQ(loader.stats().worker_restarts, 0);
}

TEST(SharedSlots, KilledWorkersAreRestartedCountedAndWriteTheSameRows) {
  auto dataset = std::make_shared<Pixels>(320, std::chrono::microseconds(400));
  const std::vector<Bytes> reference = ThreadBatches(dataset);
  LoaderOptions options = SharedSlotOptions(WorkerMode::kProcess);
  options.persistent_workers = true;
  DataLoader loader(dataset, options);
  std::vector<Bytes> batches;
  std::set<pid_t> killed;
  int i = 0;
  for (const Batch& b : loader) {
    batches.push_back(CopyBytes(b));
    if (i == 2 || i == 6) {
      ASSERT_TRUE(KillOneLiveChild(&killed));
    }
    ++i;
  }
  EXPECT_TRUE(batches == reference);
  // Each killed worker was started again when its thread next needed it (a
  // kill of an idle worker is seen at its next sample, within the epoch).
  EXPECT_EQ(loader.stats().worker_restarts, 2);
}

}  // namespace
}  // namespace feedline
