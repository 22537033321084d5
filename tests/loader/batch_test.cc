// Batch (include/feedline/batch.h): a handle on one delivered batch. Its
// promises to users are tested on batches a DataLoader delivers; how a
// handle returns its slot to the pool, through the engine's BatchAccess.
#include "feedline/batch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "loader/test_datasets.h"
#include "src/core/mutex.h"
#include "src/loader/batch_access.h"
#include "src/loader/slot.h"
#include "src/loader/slot_pool.h"
#include "src/loader/slot_allocator.h"

namespace feedline {
namespace {

using testing::FaultyDataset;
using testing::IndexDataset;
using testing::Indices;

// The first batch of a loader over IndexDataset(n) with batches of `batch_size`.
Batch FirstBatch(int64_t n, int64_t batch_size, bool fixed) {
  LoaderOptions o;
  o.batch_size = batch_size;
  DataLoader loader(std::make_shared<IndexDataset>(n, fixed), o);
  std::optional<Batch> b = loader.Next();
  if (!b) throw std::logic_error("no batch");
  return *b;
}

TEST(Batch, AnEmptyHandleHasNoRowsAndNoFields) {
  Batch b;
  EXPECT_FALSE(b);
  EXPECT_EQ(b.size(), 0);
  EXPECT_EQ(b.index(), -1);
  EXPECT_EQ(b.epoch(), -1);
  EXPECT_TRUE(b.indices().empty());
  EXPECT_EQ(b.num_fields(), 0);
  EXPECT_EQ(b.Find("index"), nullptr);
  EXPECT_THROW(b["index"], Error);
}

TEST(Batch, SizeIndexEpochAndIndicesDescribeTheBatch) {
  LoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(std::make_shared<IndexDataset>(10), o);
  std::vector<Batch> batches;
  while (std::optional<Batch> b = loader.Next()) batches.push_back(*b);
  ASSERT_EQ(batches.size(), 3u);
  for (size_t k = 0; k < batches.size(); ++k) {
    EXPECT_TRUE(batches[k]);
    EXPECT_EQ(batches[k].index(), static_cast<int64_t>(k));
    EXPECT_EQ(batches[k].epoch(), 0);
  }
  EXPECT_EQ(batches[2].size(), 2);  // the short last batch
  std::span<const int64_t> indices = batches[2].indices();
  EXPECT_EQ(std::vector<int64_t>(indices.begin(), indices.end()), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(Indices(batches[2]), (std::vector<int64_t>{8, 9}));
}

TEST(Batch, FieldsByNameAndByIndexAreTheSameTensors) {
  for (bool fixed : {false, true}) {
    Batch b = FirstBatch(6, 3, fixed);
    ASSERT_EQ(b.num_fields(), 2) << "fixed " << fixed;
    std::set<std::string> names;
    for (int i = 0; i < b.num_fields(); ++i) {
      const std::string& name = b.field_name(i);
      names.insert(name);
      EXPECT_EQ(b.Find(name), &b.field(i)) << name;
      EXPECT_EQ(&b[name], &b.field(i)) << name;
      EXPECT_EQ(b.field(i).shape()[0], 3) << name;  // stacked along the batch
    }
    EXPECT_EQ(names, (std::set<std::string>{"index", "noise"}));
    EXPECT_EQ(b["noise"].shape(), (Shape{3, 4}));
    EXPECT_EQ(b["index"].dtype(), DType::kI64);
  }
}

TEST(Batch, AnUnknownFieldIsAnErrorListingTheFields) {
  Batch b = FirstBatch(4, 2, false);
  EXPECT_EQ(b.Find("label"), nullptr);
  try {
    b["label"];
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'label'"), std::string::npos) << message;
    EXPECT_NE(message.find("index"), std::string::npos) << message;
    EXPECT_NE(message.find("noise"), std::string::npos) << message;
  }
}

TEST(Batch, CopiesViewTheSameStorage) {
  Batch b = FirstBatch(8, 4, true);
  Batch copy = b;
  Batch assigned;
  assigned = b;
  for (int i = 0; i < b.num_fields(); ++i) {
    EXPECT_EQ(copy.field(i).raw(), b.field(i).raw());
    EXPECT_EQ(assigned.field(i).raw(), b.field(i).raw());
  }
  const Batch& same = assigned;
  assigned = same;  // self-assignment keeps the handle
  EXPECT_EQ(Indices(assigned), (std::vector<int64_t>{0, 1, 2, 3}));
  Batch moved = std::move(copy);
  EXPECT_FALSE(copy);  // NOLINT(bugprone-use-after-move): a moved-from handle is empty
  EXPECT_EQ(moved["index"].raw(), b["index"].raw());
}

TEST(Batch, OutlivesLoader) {
  Batch kept;
  {
    LoaderOptions o;
    o.batch_size = 3;
    o.num_workers = 2;
    DataLoader loader(std::make_shared<IndexDataset>(9), o);
    kept = *loader.Next();
  }
  EXPECT_EQ(Indices(kept), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Batch, ReplacedMaskIsABoolPerRow) {
  LoaderOptions o;
  o.batch_size = 3;
  o.error_policy = ErrorPolicy::kReplace;
  DataLoader loader(std::make_shared<FaultyDataset>(6, std::set<int64_t>{1}), o);
  std::vector<std::vector<uint8_t>> masks;
  for (const Batch& b : loader) {
    const Tensor& mask = b["replaced"];
    EXPECT_EQ(mask.dtype(), DType::kBool);
    EXPECT_EQ(mask.shape(), Shape{b.size()});
    const auto* flags = static_cast<const uint8_t*>(mask.raw());
    masks.emplace_back(flags, flags + b.size());
    if (masks.size() == 1) {
      // The substitute is another sample, not the failed one.
      EXPECT_NE(Indices(b)[1], 1);
      EXPECT_EQ(b.indices()[1], Indices(b)[1]);
    }
  }
  EXPECT_EQ(masks, (std::vector<std::vector<uint8_t>>{{0, 1, 0}, {0, 0, 0}}));
}

// A pool of one slot, holding one delivered batch with a field "x" of 4 i32.
struct OneSlotPool {
  std::shared_ptr<internal::SchedulerLock> lock = std::make_shared<internal::SchedulerLock>();
  std::shared_ptr<internal::SlotPool> pool = std::make_shared<internal::SlotPool>(
      1, std::make_shared<internal::HeapSlotAllocator>(), lock);
  internal::Slot* slot = nullptr;

  Batch Deliver() {
    internal::MutexLock held(&lock->mu);
    slot = pool->TakeFreeLocked();
    if (slot == nullptr) throw std::logic_error("no free slot");
    slot->ResetFields();
    slot->rows = 4;
    slot->batch_index = 7;
    slot->epoch = 2;
    slot->delivered_indices = {3, 1, 4, 1};
    Tensor x = internal::SlotBatchBuilder(slot).Add("x", DType::kI32, Shape{4});
    for (int i = 0; i < 4; ++i) x.data<int32_t>()[i] = 10 * i;
    pool->MarkDeliveredLocked(slot);
    return internal::BatchAccess::Make(pool, slot);
  }
  bool SlotIsFree() {
    internal::MutexLock held(&lock->mu);
    return pool->HasFreeLocked() && pool->delivered_count_locked() == 0;
  }
};

TEST(Batch, ViewsTheSlotsStorage) {
  OneSlotPool p;
  Batch b = p.Deliver();
  EXPECT_EQ(b.size(), 4);
  EXPECT_EQ(b.index(), 7);
  EXPECT_EQ(b.epoch(), 2);
  std::span<const int64_t> indices = b.indices();
  EXPECT_EQ(std::vector<int64_t>(indices.begin(), indices.end()),
            (std::vector<int64_t>{3, 1, 4, 1}));
  EXPECT_EQ(b["x"].raw(), p.slot->fields[0].storage.data());
  EXPECT_EQ(std::vector<int32_t>(b["x"].data<int32_t>(), b["x"].data<int32_t>() + 4),
            (std::vector<int32_t>{0, 10, 20, 30}));
}

TEST(Batch, TheSlotReturnsToThePoolWhenTheLastHandleDies) {
  OneSlotPool p;
  std::optional<Batch> first(p.Deliver());
  EXPECT_FALSE(p.SlotIsFree());
  std::optional<Batch> copy(*first);
  Batch moved = std::move(*copy);
  copy.reset();
  first.reset();
  EXPECT_FALSE(p.SlotIsFree());  // `moved` still holds it
  Batch assigned;
  assigned = moved;
  moved = Batch();  // assigning over a handle releases it
  EXPECT_FALSE(p.SlotIsFree());
  assigned = Batch();
  EXPECT_TRUE(p.SlotIsFree());
  // And the same slot serves the next batch.
  internal::Slot* before = p.slot;
  Batch next = p.Deliver();
  EXPECT_EQ(p.slot, before);
}

TEST(Batch, AHandleKeepsThePoolAlive) {
  OneSlotPool p;
  Batch b = p.Deliver();
  std::weak_ptr<internal::SlotPool> pool = p.pool;
  p.pool.reset();
  EXPECT_FALSE(pool.expired());
  EXPECT_EQ(b["x"].data<int32_t>()[3], 30);
  b = Batch();
  EXPECT_TRUE(pool.expired());
}

}  // namespace
}  // namespace feedline
