// Slot, SlotStorage, SlotBatchBuilder, SlotLayout and SlotPool
// (src/loader/slot.h, slot_layout.h): the engine's batch buffers, tested
// through their internal headers.
#include "src/loader/slot.h"
#include "src/loader/slot_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "src/core/mutex.h"
#include "src/loader/slot_allocator.h"
#include "src/loader/slot_layout.h"

namespace feedline::internal {
namespace {

bool Aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % SlotAllocator::kAlignment == 0;
}

// A slot as the pool makes one: its storage from `allocator`.
struct TestSlot {
  HeapSlotAllocator allocator;
  Slot slot;
  TestSlot() { slot.allocator = &allocator; }
};

std::vector<std::string> UsedNames(const Slot& slot) {
  std::vector<std::string> names;
  for (int i = 0; i < slot.num_fields; ++i) names.push_back(slot.fields[static_cast<size_t>(i)].name);
  return names;
}

TEST(SlotStorage, GrowsKeepingItsContentsAndIsAligned) {
  HeapSlotAllocator heap;
  SlotStorage storage(&heap);
  EXPECT_EQ(storage.size(), 0u);
  storage.resize(100);
  ASSERT_NE(storage.data(), nullptr);
  EXPECT_TRUE(Aligned(storage.data()));
  for (int i = 0; i < 100; ++i) storage.data()[i] = static_cast<std::byte>(i);
  storage.resize(101);
  EXPECT_EQ(storage.size(), 101u);
  EXPECT_TRUE(Aligned(storage.data()));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(storage.data()[i], static_cast<std::byte>(i)) << i;
  // Geometric growth: one more byte takes at least twice the old size.
  EXPECT_GE(storage.capacity(), 200u);
  EXPECT_EQ(heap.bytes_in_use(), static_cast<int64_t>(storage.capacity()));
}

TEST(SlotStorage, ShrinkingKeepsTheBlock) {
  HeapSlotAllocator heap;
  SlotStorage storage(&heap);
  storage.resize(4096);
  const std::byte* data = storage.data();
  const size_t capacity = storage.capacity();
  storage.resize(10);
  EXPECT_EQ(storage.size(), 10u);
  EXPECT_EQ(storage.data(), data);
  EXPECT_EQ(storage.capacity(), capacity);
  storage.resize(4096);  // back within the block: no new allocation
  EXPECT_EQ(storage.data(), data);
}

TEST(SlotStorage, ReturnsItsBlockToTheAllocator) {
  HeapSlotAllocator heap;
  {
    SlotStorage storage(&heap);
    storage.resize(1000);
    EXPECT_GE(heap.bytes_in_use(), 1000);
    SlotStorage moved(std::move(storage));
    EXPECT_EQ(storage.capacity(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_GE(moved.capacity(), 1000u);
  }
  EXPECT_EQ(heap.bytes_in_use(), 0);
}

TEST(Slot, FieldsAreAddedInOrderAsViewsOfTheirStorage) {
  TestSlot t;
  SlotBatchBuilder builder(&t.slot);
  Tensor image = builder.Add("image", DType::kF32, Shape{4, 3});
  Tensor label = builder.Add("label", DType::kI64, Shape{4});
  EXPECT_EQ(UsedNames(t.slot), (std::vector<std::string>{"image", "label"}));
  const SlotField& f = t.slot.fields[0];
  EXPECT_TRUE(f.used);
  EXPECT_FALSE(f.fixed);
  EXPECT_EQ(f.tensor.dtype(), DType::kF32);
  EXPECT_EQ(f.tensor.shape(), (Shape{4, 3}));
  EXPECT_EQ(image.raw(), f.storage.data());
  EXPECT_EQ(label.raw(), t.slot.fields[1].storage.data());
  EXPECT_GE(f.storage.size(), 4u * 3u * sizeof(float));
  EXPECT_TRUE(Aligned(image.raw()));
  EXPECT_TRUE(Aligned(label.raw()));
  EXPECT_EQ(t.slot.storage_bytes(),
            t.slot.fields[0].storage.capacity() + t.slot.fields[1].storage.capacity());
}

TEST(Slot, AFieldAddedTwiceToABatchIsASampleErrorNamingIt) {
  TestSlot t;
  SlotBatchBuilder builder(&t.slot);
  builder.Add("x", DType::kU8, Shape{1});
  try {
    builder.Add("x", DType::kU8, Shape{1});
    FAIL() << "expected a SampleError";
  } catch (const SampleError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.slot.num_fields, 1);
}

TEST(Slot, TheNextBatchReusesEachFieldsStorageByName) {
  TestSlot t;
  SlotBatchBuilder builder(&t.slot);
  const void* a = builder.Add("a", DType::kU8, Shape{1000}).raw();
  const void* b = builder.Add("b", DType::kU8, Shape{500}).raw();
  const int64_t bytes = t.allocator.bytes_in_use();
  t.slot.ResetFields();
  EXPECT_EQ(t.slot.num_fields, 0);
  EXPECT_FALSE(t.slot.fields[0].used);
  EXPECT_FALSE(t.slot.fields[1].used);
  // Another order, same sizes: each name finds its old storage and nothing
  // is allocated.
  EXPECT_EQ(builder.Add("b", DType::kU8, Shape{500}).raw(), b);
  EXPECT_EQ(builder.Add("a", DType::kU8, Shape{1000}).raw(), a);
  EXPECT_EQ(UsedNames(t.slot), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(t.allocator.bytes_in_use(), bytes);
  EXPECT_EQ(t.slot.fields.size(), 2u);
}

TEST(Slot, FieldForPutsTheFieldNextAndLeavesUnusedOnesBehind) {
  TestSlot t;
  SlotBatchBuilder builder(&t.slot);
  builder.Add("a", DType::kU8, Shape{8});
  builder.Add("b", DType::kU8, Shape{8});
  builder.Add("c", DType::kU8, Shape{8});
  t.slot.ResetFields();
  // "c" moves to position 0; a new name is appended after the fields the
  // slot already had, then moved to the next used position.
  SlotField& c = t.slot.FieldFor("c");
  EXPECT_EQ(&c, &t.slot.fields[0]);
  EXPECT_EQ(c.name, "c");
  EXPECT_TRUE(c.used);
  EXPECT_GE(c.storage.size(), 8u);  // kept from the last batch; the caller sizes it
  SlotField& d = t.slot.FieldFor("d");
  EXPECT_EQ(&d, &t.slot.fields[1]);
  EXPECT_EQ(d.name, "d");
  EXPECT_EQ(d.storage.size(), 0u);
  EXPECT_EQ(t.slot.num_fields, 2);
  ASSERT_EQ(t.slot.fields.size(), 4u);
  // "a" and "b" keep their storage past the used fields, unused.
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_FALSE(t.slot.fields[i].used);
    EXPECT_GE(t.slot.fields[i].storage.size(), 8u);
  }
  EXPECT_EQ(UsedNames(t.slot), (std::vector<std::string>{"c", "d"}));
}

TEST(Slot, AGrownFieldIsResizedAndAnEmptyOneHasAView) {
  TestSlot t;
  SlotBatchBuilder builder(&t.slot);
  builder.Add("x", DType::kI32, Shape{2});
  t.slot.ResetFields();
  Tensor x = builder.Add("x", DType::kI32, Shape{64, 3});
  EXPECT_GE(t.slot.fields[0].storage.size(), 64u * 3u * 4u);
  EXPECT_EQ(x.raw(), t.slot.fields[0].storage.data());
  EXPECT_EQ(x.shape(), (Shape{64, 3}));
  Tensor empty = builder.Add("empty", DType::kF32, Shape{0, 5});
  EXPECT_EQ(empty.shape(), (Shape{0, 5}));
  EXPECT_EQ(empty.bytes(), 0u);
}

TEST(SlotLayout, DeclaredFieldsComeFirstWithEachRowBoundToItsPlace) {
  TestSlot t;
  SlotBatchBuilder builder(&t.slot);
  builder.Add("extra", DType::kU8, Shape{3});  // collated before: kept, moved back
  t.slot.ResetFields();
  SlotLayout layout({{"image", DType::kF32, Shape{2, 3}}, {"label", DType::kI64, Shape{}}});
  EXPECT_FALSE(layout.learning());
  layout.EnsureRows(&t.slot, 4);
  EXPECT_EQ(t.slot.row_capacity, 4);
  EXPECT_EQ(t.slot.layout, layout.current());
  ASSERT_GE(t.slot.samples.size(), 4u);
  EXPECT_GE(t.slot.indices.size(), 4u);
  EXPECT_GE(t.slot.status.size(), 4u);
  EXPECT_GE(t.slot.delivered_indices.size(), 4u);
  ASSERT_EQ(t.slot.fields.size(), 3u);
  EXPECT_EQ(t.slot.fields[0].name, "image");
  EXPECT_EQ(t.slot.fields[1].name, "label");
  EXPECT_EQ(t.slot.fields[2].name, "extra");
  EXPECT_GE(t.slot.fields[0].storage.size(), 4u * 24u);
  EXPECT_GE(t.slot.fields[1].storage.size(), 4u * 8u);
  // A row's Sample writes straight into its row of the batch storage.
  for (size_t r = 0; r < 4; ++r) {
    Sample& sample = t.slot.samples[r];
    EXPECT_EQ(sample.Allocate("image", DType::kF32, Shape{2, 3}).raw(),
              t.slot.fields[0].storage.data() + r * 24) << r;
    sample.SetScalar<int64_t>("label", static_cast<int64_t>(10 + r));
  }
  const auto* labels = reinterpret_cast<const int64_t*>(t.slot.fields[1].storage.data());
  EXPECT_EQ(std::vector<int64_t>(labels, labels + 4), (std::vector<int64_t>{10, 11, 12, 13}));
}

TEST(SlotLayout, FewerRowsKeepTheStorageAndMoreRowsGrowIt) {
  TestSlot t;
  SlotLayout layout({{"x", DType::kI32, Shape{4}}});
  layout.EnsureRows(&t.slot, 8);
  const std::byte* data = t.slot.fields[0].storage.data();
  layout.EnsureRows(&t.slot, 3);
  EXPECT_EQ(t.slot.row_capacity, 8);
  EXPECT_EQ(t.slot.fields[0].storage.data(), data);
  layout.EnsureRows(&t.slot, 20);
  EXPECT_EQ(t.slot.row_capacity, 20);
  EXPECT_GE(t.slot.fields[0].storage.size(), 20u * 16u);
  // Every row is bound to the grown storage.
  Sample& last = t.slot.samples[19];
  EXPECT_EQ(last.Allocate("x", DType::kI32, Shape{4}).raw(),
            t.slot.fields[0].storage.data() + 19 * 16);
}

TEST(SlotLayout, WithNothingDeclaredRowsAreNotBound) {
  TestSlot t;
  SlotLayout layout;
  layout.EnsureRows(&t.slot, 5);
  EXPECT_GE(t.slot.samples.size(), 5u);
  EXPECT_TRUE(t.slot.fields.empty());
  EXPECT_EQ(t.slot.row_capacity, 0);
}

TEST(SlotPool, ReusesAFreeSlotBeforeCreatingOneUpToTheLimit) {
  auto allocator = std::make_shared<HeapSlotAllocator>();
  auto lock_held = std::make_shared<SchedulerLock>();
  SlotPool pool(2, allocator, lock_held);
  MutexLock lock(&lock_held->mu);
  EXPECT_EQ(pool.size_locked(), 0);  // slots are made only when needed
  Slot* a = pool.TakeFreeLocked();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->allocator, allocator.get());
  pool.PutLocked(a);
  EXPECT_EQ(pool.TakeFreeLocked(), a);
  EXPECT_EQ(pool.size_locked(), 1);
  Slot* b = pool.TakeFreeLocked();
  ASSERT_NE(b, nullptr);
  EXPECT_NE(b, a);
  EXPECT_FALSE(pool.HasFreeLocked());
  EXPECT_EQ(pool.TakeFreeLocked(), nullptr);
  EXPECT_EQ(pool.in_use_locked(), 2);
  // A caller holding every slot may grow the pool by one.
  pool.GrowLocked();
  EXPECT_NE(pool.TakeFreeLocked(), nullptr);
  EXPECT_EQ(pool.size_locked(), 3);
}

TEST(SlotPool, UsageCountsSlotsAndTheirStorage) {
  auto lock_held = std::make_shared<SchedulerLock>();
  SlotPool pool(3, std::make_shared<HeapSlotAllocator>(), lock_held);
  MutexLock lock(&lock_held->mu);
  Slot* a = pool.TakeFreeLocked();
  Slot* b = pool.TakeFreeLocked();
  SlotBatchBuilder(a).Add("x", DType::kU8, Shape{1000});
  SlotBatchBuilder(b).Add("x", DType::kU8, Shape{100});
  pool.PutLocked(b);
  const SlotUsage usage = pool.UsageLocked();
  EXPECT_EQ(usage.limit, 3);
  EXPECT_EQ(usage.created, 2);
  EXPECT_EQ(usage.in_use, 1);
  EXPECT_EQ(usage.bytes, static_cast<int64_t>(a->storage_bytes() + b->storage_bytes()));
  EXPECT_EQ(usage.largest_slot_bytes, static_cast<int64_t>(a->storage_bytes()));
  EXPECT_GE(usage.largest_slot_bytes, 1000);
}

TEST(SlotPool, ALoweredLimitDestroysFreeSlotsBeyondIt) {
  auto heap = std::make_shared<HeapSlotAllocator>();
  auto lock_held = std::make_shared<SchedulerLock>();
  SlotPool pool(3, heap, lock_held);
  MutexLock lock(&lock_held->mu);
  std::vector<Slot*> taken;
  for (int i = 0; i < 3; ++i) {
    taken.push_back(pool.TakeFreeLocked());
    SlotBatchBuilder(taken.back()).Add("x", DType::kU8, Shape{256});
  }
  for (Slot* s : taken) pool.PutLocked(s);
  pool.SetLimitLocked(1);
  EXPECT_EQ(pool.limit_locked(), 1);
  EXPECT_EQ(pool.size_locked(), 1);
  // The destroyed slots' storage went back to the allocator.
  EXPECT_EQ(heap->bytes_in_use(),
            static_cast<int64_t>(pool.slots_locked().front()->storage_bytes()));
}

}  // namespace
}  // namespace feedline::internal
