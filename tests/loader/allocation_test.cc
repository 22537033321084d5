// Proves that the loader allocates nothing per sample in steady state: every
// operator new in this test program is counted while a window is open.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <malloc.h>

#include "feedline/data_loader.h"
#include "loader/allocation_hooks.h"
#include "loader/test_datasets.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};
// Fault injection and accounting for the other tests of this program
// (allocation_hooks.h).
std::atomic<size_t> g_fail_at_least{0};
std::atomic<int64_t> g_live_aligned_bytes{0};
}  // namespace

namespace feedline::testing {
int64_t LiveAlignedBytes() { return g_live_aligned_bytes.load(); }
void FailAllocationsOfAtLeast(size_t bytes) { g_fail_at_least.store(bytes); }
}  // namespace feedline::testing

// GCC sees free() inlined where new-expressions' memory is released and warns
// of a mismatch; here operator new itself is malloc, so the pairs match.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// Every replaceable allocation function that pairs with free(), so that none
// mixes with the runtime's own (sanitizers check the pairing).
namespace {
bool Injected(size_t size) {
  const size_t limit = g_fail_at_least.load(std::memory_order_relaxed);
  return limit != 0 && size >= limit;
}
void* CountedAlloc(size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (Injected(size)) return nullptr;
  return std::malloc(size == 0 ? 1 : size);
}
// The over-aligned forms (batch storage asks for 64-byte blocks).
void* CountedAlignedAlloc(size_t size, std::align_val_t alignment) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (Injected(size)) return nullptr;
  const size_t align = static_cast<size_t>(alignment);
  const size_t rounded = (std::max<size_t>(size, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p != nullptr) g_live_aligned_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p)));
  return p;
}
void AlignedFree(void* p) {
  if (p != nullptr) g_live_aligned_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}
}  // namespace

void* operator new(size_t size) {
  if (void* p = CountedAlloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) {
  if (void* p = CountedAlloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t size, const std::nothrow_t&) noexcept { return CountedAlloc(size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return CountedAlloc(size); }
void* operator new(size_t size, std::align_val_t alignment) {
  if (void* p = CountedAlignedAlloc(size, alignment)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size, std::align_val_t alignment) {
  if (void* p = CountedAlignedAlloc(size, alignment)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(size, alignment);
}
void* operator new[](size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return CountedAlignedAlloc(size, alignment);
}
void operator delete(void* p, std::align_val_t) noexcept { AlignedFree(p); }
void operator delete[](void* p, std::align_val_t) noexcept { AlignedFree(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { AlignedFree(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { AlignedFree(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { AlignedFree(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { AlignedFree(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace feedline {
namespace {

int64_t AllocationsInOneEpoch(DataLoader& loader, int64_t* samples) {
  g_allocations.store(0);
  g_counting.store(true);
  int64_t n = 0;
  for (const Batch& batch : loader) n += batch.size();
  g_counting.store(false);
  *samples = n;
  return g_allocations.load();
}

class SteadyState : public ::testing::TestWithParam<std::tuple<bool, int>> {};

TEST_P(SteadyState, NoAllocationPerSample) {
  const auto [fixed, workers] = GetParam();
  LoaderOptions o;
  o.batch_size = 64;
  o.num_workers = workers;
  o.persistent_workers = true;
  o.shuffle = true;
  DataLoader loader(std::make_shared<testing::IndexDataset>(64 * 100, fixed), o);
  int64_t samples = 0;
  AllocationsInOneEpoch(loader, &samples);  // warm-up: slots and buffers are made here
  // Slots are made only when the pipeline needs one, which depends on how the
  // threads were scheduled (a consumer that loads cheap rows itself may need
  // fewer at first): a later epoch may still make one. At most the slot limit
  // (num_workers * prefetch_factor = 4) can be made, so of 5 epochs one makes
  // none; allocations per sample or batch would show in every epoch.
  int64_t allocations = -1;
  for (int epoch = 0; epoch < 5; ++epoch) {
    const int64_t n = AllocationsInOneEpoch(loader, &samples);
    EXPECT_EQ(samples, 6400);
    if (allocations < 0 || n < allocations) allocations = n;
  }
  // What remains is per epoch (the epoch's plan), never per sample or batch.
  EXPECT_LE(allocations, 10) << "fixed=" << fixed << " workers=" << workers;
}

INSTANTIATE_TEST_SUITE_P(Loader, SteadyState,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(0, 2)));

TEST(SteadyState, CounterSeesAllocations) {
  // The counting hook itself works: a vector allocation is seen.
  g_allocations.store(0);
  g_counting.store(true);
  auto* v = new std::vector<int>(100);
  g_counting.store(false);
  delete v;
  EXPECT_GE(g_allocations.load(), 2);
  // And so does an over-aligned one.
  g_allocations.store(0);
  g_counting.store(true);
  void* aligned = ::operator new(1000, std::align_val_t{64});
  g_counting.store(false);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 64, 0u);
  ::operator delete(aligned, std::align_val_t{64});
  EXPECT_EQ(g_allocations.load(), 1);
}

}  // namespace
}  // namespace feedline
