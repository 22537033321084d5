// The engine's runtime controls (SetActiveWorkers, SetSlotLimit), as the
// online tuner uses them: they change how a run loads, never what it
// delivers. Also the slot allocator the pool gets its storage from.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/rng.h"
#include "loader/test_datasets.h"
#include "src/loader/engine.h"
#include "src/loader/slot.h"
#include "src/loader/slot_allocator.h"

namespace feedline {
namespace {

using internal::Engine;
using testing::IndexDataset;
using testing::RangeStreams;
using testing::Indices;
using testing::SlowDataset;

// A batch's rows, bit for bit: its indices and the raw bytes of "noise"
// (drawn from each sample's own Rng).
struct Snapshot {
  std::vector<int64_t> indices;
  std::vector<unsigned char> noise;
  bool operator==(const Snapshot&) const = default;
};

Snapshot Take(const Batch& b) {
  Snapshot s;
  s.indices = Indices(b);
  const Tensor& noise = b["noise"];
  const auto* bytes = static_cast<const unsigned char*>(noise.raw());
  s.noise.assign(bytes, bytes + noise.bytes());
  return s;
}

LoaderOptions Options(int workers) {
  LoaderOptions o;
  o.batch_size = 16;
  o.num_workers = workers;
  o.shuffle = true;
  o.seed = 7;
  return o;
}

constexpr int64_t kSamples = 16 * 40 + 5;  // a short last batch

// Runs `epochs` epochs; `each` is called before every Next with the number
// of batches delivered so far, and the latest `held` batches are kept while
// the next one is asked for (0: each is dropped before the next).
std::vector<Snapshot> Consume(Engine& engine, int epochs, size_t held,
                          const std::function<void(int64_t)>& each = {}) {
  std::vector<Snapshot> out;
  int64_t delivered = 0;
  for (int e = 0; e < epochs; ++e) {
    engine.BeginIteration();
    std::deque<Batch> keep;
    while (true) {
      while (keep.size() > held) keep.pop_front();
      if (each) each(delivered);
      std::optional<Batch> b = engine.Next();
      if (!b) break;
      ++delivered;
      out.push_back(Take(*b));
      keep.push_back(std::move(*b));
    }
  }
  return out;
}

std::vector<Snapshot> Reference(int epochs) {
  Engine engine(std::make_shared<IndexDataset>(kSamples, /*fixed=*/true), Options(0));
  return Consume(engine, epochs, 1);
}

TEST(EngineControls, ActiveWorkersChangedMidEpochKeepTheBatches) {
  const std::vector<Snapshot> expected = Reference(2);
  Engine engine(std::make_shared<IndexDataset>(kSamples, /*fixed=*/true), Options(4));
  const int pattern[] = {1, 3, 2, 4, 1, 1, 4, 2};
  const std::vector<Snapshot> got = Consume(engine, 2, 1, [&](int64_t delivered) {
    if (delivered % 5 == 0) engine.SetActiveWorkers(pattern[(delivered / 5) % 8]);
  });
  EXPECT_EQ(got, expected);
}

TEST(EngineControls, SlotLimitChangedMidEpochKeepsTheBatches) {
  const std::vector<Snapshot> expected = Reference(2);
  for (size_t held : {size_t{0}, size_t{3}}) {
    Engine engine(std::make_shared<IndexDataset>(kSamples, /*fixed=*/true), Options(3));
    const int pattern[] = {1, 5, 2, 8, 1, 3};
    // With 3 batches held, lowering the limit to 1 leaves the consumer
    // holding more slots than allowed: the pool must still make progress.
    const std::vector<Snapshot> got = Consume(engine, 2, held, [&](int64_t delivered) {
      if (delivered % 4 == 0) engine.SetSlotLimit(pattern[(delivered / 4) % 6]);
    });
    EXPECT_EQ(got, expected) << "held=" << held;
  }
}

TEST(EngineControls, ControlsFromAnotherThreadWhileLoadingKeepTheBatches) {
  const std::vector<Snapshot> expected = Reference(3);
  Engine engine(std::make_shared<IndexDataset>(kSamples, /*fixed=*/true), Options(4));
  std::atomic<bool> done{false};
  std::thread tuner([&] {
    Rng rng(/*seed=*/11, 0, 0);
    while (!done.load()) {
      engine.SetActiveWorkers(1 + static_cast<int>(rng.UniformInt(4)));
      engine.SetSlotLimit(1 + static_cast<int>(rng.UniformInt(10)));
      (void)engine.slot_usage();
      (void)engine.stats();
      std::this_thread::yield();
    }
  });
  const std::vector<Snapshot> got = Consume(engine, 3, 2);
  done.store(true);
  tuner.join();
  EXPECT_EQ(got, expected);
}

TEST(EngineControls, ParkedWorkersClaimNothingUntilLetBackIn) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 4;
  Engine engine(std::make_shared<SlowDataset>(48, std::chrono::milliseconds(2)), o);
  engine.SetActiveWorkers(1);
  EXPECT_EQ(engine.active_workers(), 1);
  int64_t rows = 0;
  engine.BeginIteration();
  while (std::optional<Batch> b = engine.Next()) rows += b->size();
  EXPECT_EQ(rows, 48);
  StatsSnapshot stats = engine.stats();
  ASSERT_EQ(stats.workers.size(), 4u);
  EXPECT_EQ(stats.workers[0].samples, 48);
  for (int w = 1; w < 4; ++w) EXPECT_EQ(stats.workers[static_cast<size_t>(w)].samples, 0) << w;

  // Let back in: each sample takes 2 ms, so the others take rows too.
  engine.SetActiveWorkers(4);
  engine.BeginIteration();
  while (std::optional<Batch> b = engine.Next()) rows += b->size();
  stats = engine.stats();
  EXPECT_EQ(stats.samples, 96);
  EXPECT_GT(stats.workers[1].samples + stats.workers[2].samples + stats.workers[3].samples, 0);
}

TEST(EngineControls, SlotsAreCreatedOnlyWhenNeededAndFreedBeyondALoweredLimit) {
  Engine engine(std::make_shared<IndexDataset>(kSamples, /*fixed=*/true), Options(0));
  engine.SetSlotLimit(8);
  Consume(engine, 1, 0);
  // The caller loads one batch at a time and drops it before the next: one
  // slot serves the epoch, whatever the limit allows.
  EXPECT_EQ(engine.slot_usage().created, 1);
  const int64_t one_slot = engine.slot_usage().bytes;
  EXPECT_GE(one_slot, 16 * (8 + 16));  // index i64 + noise 4 x f32 per row
  EXPECT_EQ(engine.slot_usage().largest_slot_bytes, one_slot);

  Consume(engine, 1, 3);  // three held while the next loads: four slots
  EXPECT_EQ(engine.slot_usage().created, 4);
  EXPECT_EQ(engine.slot_usage().bytes, 4 * one_slot);

  engine.SetSlotLimit(1);  // free slots beyond the limit go at once
  EXPECT_EQ(engine.slot_usage().created, 1);
  EXPECT_EQ(engine.slot_usage().bytes, one_slot);
  EXPECT_EQ(engine.slot_limit(), 1);
}

TEST(EngineControls, WorkersNeverUseMoreSlotsThanTheLimit) {
  LoaderOptions o = Options(4);
  o.prefetch_factor = 4;  // 16 slots allowed by the options
  Engine engine(std::make_shared<IndexDataset>(kSamples, /*fixed=*/true), o);
  EXPECT_EQ(engine.slot_limit(), 16);
  engine.SetSlotLimit(2);
  int max_created = 0;
  engine.BeginIteration();
  while (true) {
    std::optional<Batch> b = engine.Next();
    if (!b) break;
    max_created = std::max(max_created, engine.slot_usage().created);
  }
  EXPECT_LE(max_created, 2);
  EXPECT_GE(max_created, 1);
}

TEST(EngineControls, OutOfRangeArgumentsAreRefusedByName) {
  Engine engine(std::make_shared<IndexDataset>(10), Options(4));
  auto error_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of([&] { engine.SetActiveWorkers(0); }),
            "SetActiveWorkers: n must be 1..4 (num_workers), got 0");
  EXPECT_EQ(error_of([&] { engine.SetActiveWorkers(5); }),
            "SetActiveWorkers: n must be 1..4 (num_workers), got 5");
  EXPECT_EQ(error_of([&] { engine.SetSlotLimit(0); }), "SetSlotLimit: n must be 1..65536, got 0");
  EXPECT_EQ(error_of([&] { engine.SetSlotLimit(65537); }),
            "SetSlotLimit: n must be 1..65536, got 65537");
  EXPECT_EQ(engine.active_workers(), 4);  // unchanged by the refused calls
  EXPECT_EQ(engine.slot_limit(), 8);
}

TEST(EngineControls, IterableDatasetKeepsEveryWorkerAndASlotEach) {
  LoaderOptions o;
  o.batch_size = 3;
  o.num_workers = 3;
  auto run = [&](bool controls) {
    Engine engine(std::make_shared<RangeStreams>(100), o);
    if (controls) {
      engine.SetActiveWorkers(1);  // round-robin over all streams: none parks
      EXPECT_EQ(engine.active_workers(), 3);
      engine.SetSlotLimit(1);  // one slot per worker at least
      EXPECT_EQ(engine.slot_limit(), 3);
    }
    std::vector<std::vector<int64_t>> out;
    for (int e = 0; e < 2; ++e) {
      engine.BeginIteration();
      while (std::optional<Batch> b = engine.Next()) out.push_back(Indices(*b));
    }
    return out;
  };
  const auto expected = run(false);
  // Streams of 34, 33 and 33 samples in batches of 3: 12 + 11 + 11 a epoch.
  EXPECT_EQ(expected.size(), 2u * 34u);
  EXPECT_EQ(run(true), expected);
}

// A worker's batch count is its own: once a batch is ready the consumer may
// deliver and release it, and another worker take its slot, before the
// worker that filled it takes the lock back to count it. Batches of one, a
// slot per worker and batches released at once keep slots passing between
// workers; a batch counted for the slot's next owner left the consumer
// waiting for a batch no worker would make.
TEST(EngineControls, IterableDatasetCountsEachBatchForTheWorkerThatMadeIt) {
  LoaderOptions o;
  o.batch_size = 1;
  o.num_workers = 4;
  o.prefetch_factor = 1;
  constexpr int64_t kSamples = 400;
  DataLoader loader(std::make_shared<RangeStreams>(kSamples), o);
  // Worker w yields w, w + 4, ...: taken round-robin, 0, 1, 2, ...
  std::vector<int64_t> expected(kSamples);
  for (int64_t i = 0; i < kSamples; ++i) expected[static_cast<size_t>(i)] = i;
  for (int e = 0; e < 5; ++e) {
    loader.StartIteration();
    std::vector<int64_t> got;
    Batch batch;
    NextStatus status;
    while ((status = loader.TryNext(std::chrono::seconds(10), &batch)) == NextStatus::kBatch) {
      for (int64_t index : Indices(batch)) got.push_back(index);
      batch = Batch();  // its slot is free for the next worker at once
    }
    ASSERT_EQ(status, NextStatus::kEnd)
        << "epoch " << e << ": no batch for 10 s after " << got.size() << " of " << kSamples;
    EXPECT_EQ(got, expected) << "epoch " << e;
  }
}

TEST(SlotAllocator, HeapBlocksAreAlignedAndCounted) {
  internal::HeapSlotAllocator heap;
  EXPECT_STREQ(heap.name(), "heap");
  internal::SlotBlock a = heap.Allocate(1000);
  internal::SlotBlock b = heap.Allocate(64);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % internal::SlotAllocator::kAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % internal::SlotAllocator::kAlignment, 0u);
  EXPECT_EQ(heap.bytes_in_use(), 1064);
  EXPECT_EQ(heap.Allocate(0).data, nullptr);
  heap.Free(a);
  heap.Free(b);
  heap.Free(internal::SlotBlock{});
  EXPECT_EQ(heap.bytes_in_use(), 0);
}

TEST(SlotAllocator, StorageGrowsKeepingItsBytesAndGivesThemBack) {
  internal::HeapSlotAllocator heap;
  {
    internal::SlotStorage storage(&heap);
    storage.resize(100);
    for (int i = 0; i < 100; ++i) storage.data()[i] = static_cast<std::byte>(i);
    storage.resize(150);  // grows geometrically: 200 bytes
    EXPECT_EQ(storage.size(), 150u);
    EXPECT_EQ(storage.capacity(), 200u);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(storage.data()[i], static_cast<std::byte>(i));
    storage.resize(10);  // shrinking keeps the block
    EXPECT_EQ(storage.capacity(), 200u);
    internal::SlotStorage moved(std::move(storage));
    EXPECT_EQ(storage.data(), nullptr);
    EXPECT_EQ(heap.bytes_in_use(), 200);
  }
  EXPECT_EQ(heap.bytes_in_use(), 0);
  internal::SlotStorage orphan;
  EXPECT_THROW(orphan.resize(1), std::logic_error);
}

}  // namespace
}  // namespace feedline
