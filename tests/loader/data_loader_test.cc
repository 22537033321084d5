#include "feedline/data_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "feedline/concat.h"
#include "feedline/subset.h"
#include "loader/test_datasets.h"

namespace feedline {
namespace {

using testing::FaultyDataset;
using testing::IndexDataset;
using testing::RangeStreams;
using testing::Indices;
using testing::SlowDataset;
using testing::VariableDataset;

// Every batch of one epoch, as (index values, noise bytes).
struct EpochData {
  std::vector<std::vector<int64_t>> indices;
  std::vector<std::vector<uint8_t>> bytes;
};

EpochData RunEpoch(DataLoader& loader) {
  EpochData out;
  for (const Batch& batch : loader) {
    out.indices.push_back(Indices(batch));
    std::vector<uint8_t> bytes;
    for (int f = 0; f < batch.num_fields(); ++f) {
      const Tensor& t = batch.field(f);
      const auto* p = static_cast<const uint8_t*>(t.raw());
      bytes.insert(bytes.end(), p, p + t.bytes());
    }
    out.bytes.push_back(std::move(bytes));
  }
  return out;
}

TEST(DataLoader, SequentialBatchesInOrder) {
  LoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(std::make_shared<IndexDataset>(10), o);
  EXPECT_EQ(loader.size(), 3);
  EpochData e = RunEpoch(loader);
  ASSERT_EQ(e.indices.size(), 3u);
  EXPECT_EQ(e.indices[0], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(e.indices[1], (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(e.indices[2], (std::vector<int64_t>{8, 9}));
}

TEST(DataLoader, DropLastDropsShortBatch) {
  LoaderOptions o;
  o.batch_size = 4;
  o.drop_last = true;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<IndexDataset>(10), o);
  EXPECT_EQ(loader.size(), 2);
  EXPECT_EQ(RunEpoch(loader).indices.size(), 2u);
}

TEST(DataLoader, BatchShapesAndIndices) {
  LoaderOptions o;
  o.batch_size = 3;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<IndexDataset>(7), o);
  for (const Batch& b : loader) {
    EXPECT_EQ(b["index"].shape(), Shape{b.size()});
    EXPECT_EQ(b["noise"].shape(), (Shape{b.size(), 4}));
    EXPECT_EQ(b["index"].dtype(), DType::kI64);
    std::vector<int64_t> from_field = Indices(b);
    EXPECT_EQ(from_field, std::vector<int64_t>(b.indices().begin(), b.indices().end()));
  }
}

TEST(DataLoader, ShuffleIsAPermutationThatChangesEachEpoch) {
  LoaderOptions o;
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 11;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<IndexDataset>(50), o);
  std::vector<int64_t> first, second;
  for (const Batch& b : loader) for (int64_t i : Indices(b)) first.push_back(i);
  for (const Batch& b : loader) for (int64_t i : Indices(b)) second.push_back(i);
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expected(50);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(first, second);
  // The same seed and epoch give the same order in a fresh loader.
  DataLoader again(std::make_shared<IndexDataset>(50), o);
  std::vector<int64_t> replay;
  for (const Batch& b : again) for (int64_t i : Indices(b)) replay.push_back(i);
  EXPECT_EQ(replay, first);
}

class WorkerCountInvariance : public ::testing::TestWithParam<bool> {};

TEST_P(WorkerCountInvariance, BitIdenticalForAnyNumberOfWorkers) {
  const bool fixed = GetParam();
  std::vector<EpochData> runs;
  for (int workers : {0, 1, 2, 8}) {
    LoaderOptions o;
    o.batch_size = 7;
    o.shuffle = true;
    o.seed = 1234;
    o.num_workers = workers;
    DataLoader loader(std::make_shared<IndexDataset>(100, fixed), o);
    loader.set_epoch(3);
    runs.push_back(RunEpoch(loader));
  }
  for (size_t k = 1; k < runs.size(); ++k) {
    EXPECT_EQ(runs[k].indices, runs[0].indices) << "run " << k;
    EXPECT_EQ(runs[k].bytes, runs[0].bytes) << "run " << k;
  }
  // The augmentation noise really differs between samples.
  EXPECT_NE(runs[0].bytes[0], runs[0].bytes[1]);
}

INSTANTIATE_TEST_SUITE_P(FixedAndCollated, WorkerCountInvariance, ::testing::Bool());

TEST(DataLoader, PersistentWorkersAreNotRespawned) {
  for (bool persistent : {true, false}) {
    std::atomic<int> starts{0};  // counted by worker_init
    LoaderOptions o;
    o.batch_size = 5;
    o.num_workers = 3;
    o.persistent_workers = persistent;
    o.worker_init = [&](int) { starts.fetch_add(1); };
    {
      DataLoader loader(std::make_shared<IndexDataset>(20), o);
      for (int epoch = 0; epoch < 3; ++epoch) RunEpoch(loader);
    }
    // Counted after the loader joined its threads: each calls worker_init
    // first thing, but may not have been scheduled yet while the loader lives.
    EXPECT_EQ(starts.load(), persistent ? 3 : 9) << "persistent=" << persistent;
  }
}

TEST(DataLoader, AtMostWorkersTimesPrefetchSlotsExist) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 3;
  o.prefetch_factor = 2;
  DataLoader loader(std::make_shared<IndexDataset>(400, /*fixed=*/true), o);
  std::set<const void*> buffers;
  for (const Batch& b : loader) buffers.insert(b["index"].raw());
  EXPECT_LE(buffers.size(), 6u);
  EXPECT_GE(buffers.size(), 1u);
}

TEST(DataLoader, HeldBatchesKeepTheirSlotAndDataUntilReleased) {
  LoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 1;
  o.prefetch_factor = 1;  // capacity max(2, 1) = 2 slots
  DataLoader loader(std::make_shared<IndexDataset>(10, /*fixed=*/true), o);
  std::vector<Batch> held;
  // Holding every batch (as list(loader) does) grows the pool instead of
  // deadlocking, and no held batch is overwritten.
  while (std::optional<Batch> b = loader.Next()) held.push_back(*b);
  ASSERT_EQ(held.size(), 5u);
  std::set<const void*> buffers;
  for (size_t k = 0; k < held.size(); ++k) {
    EXPECT_EQ(Indices(held[k]), (std::vector<int64_t>{2 * static_cast<int64_t>(k), 2 * static_cast<int64_t>(k) + 1}));
    buffers.insert(held[k]["index"].raw());
  }
  EXPECT_EQ(buffers.size(), 5u);
}

TEST(DataLoader, ReleasedSlotsAreReusedWithinTheBound) {
  LoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 1;
  o.prefetch_factor = 1;
  DataLoader loader(std::make_shared<IndexDataset>(40, /*fixed=*/true), o);
  std::set<const void*> buffers;
  for (const Batch& b : loader) buffers.insert(b["index"].raw());
  EXPECT_LE(buffers.size(), 2u);
}

TEST(DataLoader, TryNextWaitsInSlices) {
  LoaderOptions o;
  o.batch_size = 1;
  o.num_workers = 1;
  DataLoader loader(std::make_shared<SlowDataset>(2, std::chrono::milliseconds(300)), o);
  Batch batch;
  EXPECT_EQ(loader.TryNext(std::chrono::milliseconds(1), &batch), NextStatus::kPending);
  NextStatus status;
  do {
    status = loader.TryNext(std::chrono::milliseconds(20), &batch);
  } while (status == NextStatus::kPending);
  ASSERT_EQ(status, NextStatus::kBatch);
  EXPECT_EQ(Indices(batch), std::vector<int64_t>{0});
  while ((status = loader.TryNext(std::chrono::milliseconds(20), &batch)) == NextStatus::kPending) {
  }
  ASSERT_EQ(status, NextStatus::kBatch);
  EXPECT_EQ(loader.TryNext(std::chrono::milliseconds(1000), &batch), NextStatus::kEnd);
}

TEST(DataLoader, PaddedFieldsKeepTheirLayoutWhenShapesAgree) {
  LoaderOptions o;
  o.batch_size = 2;
  o.collate.padded = {"tokens"};
  DataLoader loader(std::make_shared<VariableDataset>(std::vector<int64_t>{3, 3}), o);
  Batch b = *loader.Next();
  ASSERT_NE(b.Find("tokens_lengths"), nullptr);
  EXPECT_EQ(b["tokens"].shape(), (Shape{2, 3}));
}

// VariableDataset whose "tokens" it declares padded in every batch.
class DeclaredPaddedDataset : public VariableDataset {
 public:
  using VariableDataset::VariableDataset;
  std::vector<std::string> PaddedFields() const override { return {"tokens"}; }
};

TEST(DataLoader, FieldsADatasetDeclaresPaddedKeepTheirLayoutThroughSubsetsAndConcats) {
  auto data = std::make_shared<DeclaredPaddedDataset>(std::vector<int64_t>{3, 3, 2, 2});
  LoaderOptions o;
  o.batch_size = 2;
  for (std::shared_ptr<const Dataset> d :
       {std::shared_ptr<const Dataset>(data),
        std::shared_ptr<const Dataset>(std::make_shared<Subset>(data, std::vector<int64_t>{2, 3})),
        std::shared_ptr<const Dataset>(std::make_shared<Concat>(
            std::vector<std::shared_ptr<const Dataset>>{data, data}))}) {
    DataLoader loader(d, o);
    Batch b = *loader.Next();
    ASSERT_NE(b.Find("tokens_lengths"), nullptr);
  }
  // Undeclared, samples that agree are stacked.
  DataLoader plain(std::make_shared<VariableDataset>(std::vector<int64_t>{3, 3}), o);
  EXPECT_EQ(plain.Next()->Find("tokens_lengths"), nullptr);
}

// VariableDataset whose "tokens" it pads to multiples of 4.
class DeclaredMultipleDataset : public VariableDataset {
 public:
  using VariableDataset::VariableDataset;
  std::vector<PadMultiple> PadMultiples() const override { return {{"tokens", {4}}}; }
};

TEST(DataLoader, PadMultiplesADatasetDeclaresHoldThroughSubsetsAndConcats) {
  auto data = std::make_shared<DeclaredMultipleDataset>(std::vector<int64_t>{3, 3, 5, 2});
  LoaderOptions o;
  o.batch_size = 2;
  for (std::shared_ptr<const Dataset> d :
       {std::shared_ptr<const Dataset>(data),
        std::shared_ptr<const Dataset>(std::make_shared<Subset>(data, std::vector<int64_t>{2, 3})),
        std::shared_ptr<const Dataset>(std::make_shared<Concat>(
            std::vector<std::shared_ptr<const Dataset>>{data, data}))}) {
    DataLoader loader(d, o);
    Batch b = *loader.Next();
    ASSERT_NE(b.Find("tokens_lengths"), nullptr);
    EXPECT_EQ(b["tokens"].shape()[1] % 4, 0);
  }
  DataLoader first(data, o);
  EXPECT_EQ(first.Next()->operator[]("tokens").shape(), (Shape{2, 4}));  // 3 and 3: 4
  // The options' multiples for the field win over the dataset's.
  o.collate.pad_multiples = {PadMultiple{"tokens", {8}}};
  DataLoader given(data, o);
  EXPECT_EQ(given.Next()->operator[]("tokens").shape(), (Shape{2, 8}));
  o.collate.pad_multiples = {PadMultiple{"tokens", {0}}};
  EXPECT_THROW(DataLoader(data, o), Error);
}

TEST(DataLoader, RaiseDeliversEarlierBatchesFirst) {
  for (int workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    DataLoader loader(std::make_shared<FaultyDataset>(16, std::set<int64_t>{9}), o);
    std::vector<std::vector<int64_t>> got;
    try {
      for (const Batch& b : loader) got.push_back(Indices(b));
      FAIL() << "no error raised";
    } catch (const SampleError& e) {
      EXPECT_EQ(e.index(), 9);
      EXPECT_EQ(e.source(), "file9.jpg");
      EXPECT_EQ(e.reason(), "decode");
      EXPECT_NE(std::string(e.what()).find("file9.jpg"), std::string::npos);
    }
    ASSERT_EQ(got.size(), 2u) << "workers=" << workers;
    EXPECT_EQ(got[1], (std::vector<int64_t>{4, 5, 6, 7}));
    // The epoch goes on after the failed batch.
    std::optional<Batch> next = loader.Next();
    ASSERT_TRUE(next);
    EXPECT_EQ(Indices(*next), (std::vector<int64_t>{12, 13, 14, 15}));
    EXPECT_EQ(loader.stats().errors_by_reason.at("decode"), 1);
  }
}

TEST(DataLoader, SkipDropsTheBadSample) {
  for (bool fixed : {false, true}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 2;
    o.error_policy = ErrorPolicy::kSkip;
    DataLoader loader(std::make_shared<FaultyDataset>(12, std::set<int64_t>{1, 5, 6}, fixed), o);
    EpochData e = RunEpoch(loader);
    ASSERT_EQ(e.indices.size(), 3u);
    EXPECT_EQ(e.indices[0], (std::vector<int64_t>{0, 2, 3}));
    EXPECT_EQ(e.indices[1], (std::vector<int64_t>{4, 7}));
    EXPECT_EQ(e.indices[2], (std::vector<int64_t>{8, 9, 10, 11}));
    EXPECT_EQ(loader.stats().skipped, 3);
  }
}

TEST(DataLoader, SkipOfAWholeBatchMovesOn) {
  LoaderOptions o;
  o.batch_size = 2;
  o.error_policy = ErrorPolicy::kSkip;
  DataLoader loader(std::make_shared<FaultyDataset>(6, std::set<int64_t>{2, 3}), o);
  EpochData e = RunEpoch(loader);
  ASSERT_EQ(e.indices.size(), 2u);
  EXPECT_EQ(e.indices[1], (std::vector<int64_t>{4, 5}));
}

TEST(DataLoader, ReplaceKeepsBatchSizeDeterministically) {
  std::vector<EpochData> runs;
  for (int workers : {0, 1, 3}) {
    LoaderOptions o;
    o.batch_size = 5;
    o.num_workers = workers;
    o.seed = 5;
    o.error_policy = ErrorPolicy::kReplace;
    DataLoader loader(std::make_shared<FaultyDataset>(20, std::set<int64_t>{3, 4, 17}, true), o);
    int replaced_rows = 0;
    EpochData e;
    for (const Batch& b : loader) {
      EXPECT_EQ(b.size(), 5);
      const Tensor& mask = b["replaced"];
      EXPECT_EQ(mask.dtype(), DType::kBool);
      const auto* flags = static_cast<const uint8_t*>(mask.raw());
      std::vector<int64_t> idx = Indices(b);
      for (int64_t r = 0; r < b.size(); ++r) {
        EXPECT_EQ(idx[r] == 3 || idx[r] == 4 || idx[r] == 17, false);
        replaced_rows += flags[r];
      }
      e.indices.push_back(idx);
    }
    EXPECT_EQ(replaced_rows, 3);
    EXPECT_EQ(loader.stats().replaced, 3);
    EXPECT_GE(loader.stats().errors, 3);
    runs.push_back(e);
  }
  EXPECT_EQ(runs[1].indices, runs[0].indices);
  EXPECT_EQ(runs[2].indices, runs[0].indices);
}

TEST(DataLoader, ReplaceGivesUpAfterMaxAttempts) {
  std::set<int64_t> all;
  for (int64_t i = 0; i < 8; ++i) all.insert(i);
  LoaderOptions o;
  o.batch_size = 2;
  o.error_policy = ErrorPolicy::kReplace;
  o.max_replace_attempts = 3;
  DataLoader loader(std::make_shared<FaultyDataset>(8, all), o);
  EXPECT_THROW(loader.Next(), SampleError);
}

TEST(DataLoader, TimeoutNamesTheSlowSample) {
  LoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 2;
  o.timeout = std::chrono::milliseconds(50);
  DataLoader loader(std::make_shared<SlowDataset>(8, std::chrono::milliseconds(600), 3), o);
  ASSERT_TRUE(loader.Next());  // batch [0, 1]
  try {
    loader.Next();
    FAIL() << "no timeout";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(e.index(), 3);
    EXPECT_EQ(e.source(), "slow3");
    EXPECT_EQ(e.reason(), "timeout");
  }
  EXPECT_EQ(loader.stats().errors_by_reason.at("timeout"), 1);
}

int CountThreads() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

// A joined thread can stay listed in /proc/self/task for a moment: the kernel
// wakes pthread_join when the thread clears its tid, before the task is
// reaped. So a count is read until it reaches `expected` (or 2 s pass) and
// the caller checks the count it ends at.
int ThreadCountOnceSettledAt(int expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int n = CountThreads();
  while (n != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = CountThreads();
  }
  return n;
}

// The count before a test: read until it stays the same for 50 ms, so that
// threads of an earlier loader that are still leaving are not counted.
int SteadyThreadCount() {
  int n = CountThreads();
  for (int same = 0, tries = 0; same < 10 && tries < 400; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int now = CountThreads();
    same = now == n ? same + 1 : 0;
    n = now;
  }
  return n;
}

TEST(DataLoader, DestroyMidEpochIsPromptAndLeavesNoThreads) {
  {
    // A first loader with workers lets runtimes that start helper threads
    // lazily (ThreadSanitizer's) start them before the count is taken.
    LoaderOptions o;
    o.num_workers = 1;
    DataLoader warm_up(std::make_shared<IndexDataset>(4), o);
    while (warm_up.Next()) {
    }
  }
  const int before = SteadyThreadCount();
  std::chrono::steady_clock::duration took;
  {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 4;
    o.prefetch_factor = 2;
    DataLoader loader(std::make_shared<IndexDataset>(100000), o);
    ASSERT_TRUE(loader.Next());
    // The workers fill every slot and block on the full pool.
    EXPECT_EQ(ThreadCountOnceSettledAt(before + 4), before + 4);
    const auto start = std::chrono::steady_clock::now();
    loader.~DataLoader();
    took = std::chrono::steady_clock::now() - start;
    new (&loader) DataLoader(std::make_shared<IndexDataset>(1), LoaderOptions{});
  }
  EXPECT_EQ(ThreadCountOnceSettledAt(before), before);
  // The contract is 100 ms; sanitizers slow everything down several times.
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), 500);
}

TEST(DataLoader, AbandonedEpochRestartsCleanly) {
  LoaderOptions o;
  o.batch_size = 3;
  o.num_workers = 2;
  o.persistent_workers = true;
  DataLoader loader(std::make_shared<IndexDataset>(30), o);
  ASSERT_TRUE(loader.Next());
  ASSERT_TRUE(loader.Next());
  loader.Reset();
  EpochData e = RunEpoch(loader);
  ASSERT_EQ(e.indices.size(), 10u);
  EXPECT_EQ(e.indices[0], (std::vector<int64_t>{0, 1, 2}));
}

TEST(DataLoader, OutOfOrderDeliversEveryBatch) {
  LoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 3;
  o.in_order = false;
  DataLoader loader(std::make_shared<SlowDataset>(20, std::chrono::milliseconds(1)), o);
  std::multiset<int64_t> seen;
  for (const Batch& b : loader) for (int64_t i : Indices(b)) seen.insert(i);
  EXPECT_EQ(seen.size(), 20u);
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(seen.count(i), 1u);
}

TEST(DataLoader, OutOfOrderLetsAFastBatchOvertakeASlowOne) {
  LoaderOptions o;
  o.batch_size = 1;
  o.num_workers = 2;
  o.in_order = false;
  DataLoader loader(std::make_shared<SlowDataset>(4, std::chrono::milliseconds(300), 0), o);
  std::optional<Batch> first = loader.Next();
  ASSERT_TRUE(first);
  EXPECT_NE(Indices(*first)[0], 0);
}

TEST(DataLoader, ResumeMidEpochIsExact) {
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = true;
  o.seed = 9;
  o.num_workers = 2;
  DataLoader full(std::make_shared<IndexDataset>(40), o);
  full.set_epoch(2);
  EpochData all = RunEpoch(full);

  DataLoader first(std::make_shared<IndexDataset>(40), o);
  first.set_epoch(2);
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(first.Next());
  const LoaderState state = first.state();
  EXPECT_EQ(state.epoch, 2);
  EXPECT_EQ(state.next_batch, 4);

  o.num_workers = 1;  // a different worker count on resume
  DataLoader resumed(std::make_shared<IndexDataset>(40), o);
  resumed.Restore(state);
  std::vector<std::vector<int64_t>> rest;
  while (std::optional<Batch> b = resumed.Next()) rest.push_back(Indices(*b));
  std::vector<std::vector<int64_t>> expected(all.indices.begin() + 4, all.indices.end());
  EXPECT_EQ(rest, expected);
}

TEST(DataLoader, PadsVariableLengthFields) {
  LoaderOptions o;
  o.batch_size = 3;
  o.collate.pad_value = -1;
  DataLoader loader(std::make_shared<VariableDataset>(std::vector<int64_t>{2, 4, 1}), o);
  Batch b = *loader.Next();
  const Tensor& tokens = b["tokens"];
  EXPECT_EQ(tokens.shape(), (Shape{3, 4}));
  const int32_t* v = tokens.data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(v, v + 12),
            (std::vector<int32_t>{1, 1, -1, -1, 2, 2, 2, 2, 3, -1, -1, -1}));
  const int64_t* len = b["tokens_lengths"].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(len, len + 3), (std::vector<int64_t>{2, 4, 1}));
}

TEST(DataLoader, KeepsRaggedFieldsRagged) {
  LoaderOptions o;
  o.batch_size = 3;
  o.collate.ragged = {"tokens"};
  DataLoader loader(std::make_shared<VariableDataset>(std::vector<int64_t>{2, 0, 3}), o);
  Batch b = *loader.Next();
  EXPECT_EQ(b["tokens"].shape(), Shape{5});
  const int64_t* off = b["tokens_offsets"].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(off, off + 4), (std::vector<int64_t>{0, 2, 2, 5}));
  const int32_t* v = b["tokens"].data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(v, v + 5), (std::vector<int32_t>{1, 1, 3, 3, 3}));
}

TEST(DataLoader, CustomCollateFunction) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  o.collate_fn = [](std::span<const Sample* const> samples, BatchBuilder& out) {
    Tensor sum = out.Add("sum", DType::kI64, Shape{});
    int64_t s = 0;
    for (const Sample* sample : samples) s += *sample->Find("index")->data<int64_t>();
    *sum.data<int64_t>() = s;
  };
  DataLoader loader(std::make_shared<IndexDataset>(8, /*fixed=*/true), o);
  std::vector<int64_t> sums;
  for (const Batch& b : loader) {
    EXPECT_EQ(b.Find("index"), nullptr);
    sums.push_back(*b["sum"].data<int64_t>());
  }
  EXPECT_EQ(sums, (std::vector<int64_t>{6, 22}));
}

TEST(DataLoader, WrongShapeForADeclaredFieldIsAnError) {
  class Liar : public Dataset {
   public:
    int64_t size() const override { return 2; }
    void Get(int64_t, Sample& out, SampleContext&) const override {
      out.Allocate("x", DType::kF32, Shape{3});
    }
    std::vector<FieldSpec> FixedFields() const override { return {{"x", DType::kF32, Shape{4}}}; }
  };
  LoaderOptions o;
  o.batch_size = 2;
  DataLoader loader(std::make_shared<Liar>(), o);
  EXPECT_THROW(loader.Next(), SampleError);
}

TEST(DataLoader, StatsCountSamplesBatchesStagesAndWorkers) {
  class Timed : public Dataset {
   public:
    int64_t size() const override { return 12; }
    void Get(int64_t i, Sample& out, SampleContext& ctx) const override {
      ctx.AddStageTime(Stage::kDecode, 1000);
      ctx.AddStageTime(Stage::kRead, 10);
      out.SetScalar<int64_t>("index", i);
    }
  };
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<Timed>(), o);
  RunEpoch(loader);
  StatsSnapshot s = loader.stats();
  EXPECT_EQ(s.samples, 12);
  EXPECT_EQ(s.batches, 3);
  EXPECT_EQ(s.stage_ns[static_cast<int>(Stage::kDecode)], 12000);
  EXPECT_EQ(s.stage_ns[static_cast<int>(Stage::kRead)], 120);
  ASSERT_EQ(s.workers.size(), 2u);
  EXPECT_EQ(s.workers[0].samples + s.workers[1].samples, 12);
  EXPECT_GE(s.first_batch_ns, 0);
  EXPECT_GT(s.elapsed_ns, 0);
  EXPECT_GE(s.wait_fraction(), 0.0);
  EXPECT_LE(s.wait_fraction(), 1.0);
}

TEST(DataLoader, RejectsBadOptionsNamingThem) {
  auto ds = std::make_shared<IndexDataset>(4);
  auto message = [&](LoaderOptions o) {
    try {
      DataLoader loader(ds, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  LoaderOptions o;
  o.batch_size = 0;
  EXPECT_NE(message(o).find("batch_size must be >= 1, got 0"), std::string::npos);
  o = LoaderOptions{};
  o.num_workers = -3;
  EXPECT_NE(message(o).find("num_workers must be >= 0, got -3"), std::string::npos);
  o = LoaderOptions{};
  o.prefetch_factor = 0;
  EXPECT_NE(message(o).find("prefetch_factor"), std::string::npos);
  o = LoaderOptions{};
  o.shuffle = true;
  o.sampler = std::make_shared<SequentialSampler>(4);
  EXPECT_NE(message(o).find("shuffle"), std::string::npos);
  o = LoaderOptions{};
  o.batch_sampler = std::make_shared<FixedBatchSampler>(std::make_shared<SequentialSampler>(4), 2, false);
  o.batch_size = 2;
  EXPECT_NE(message(o).find("batch_sampler"), std::string::npos);
  EXPECT_THROW(ParseErrorPolicy("ignore"), Error);
}

TEST(DataLoader, DistributedBatchSamplerDrivesTheLoader) {
  auto ds = std::make_shared<IndexDataset>(10);
  std::vector<int64_t> seen;
  for (int rank = 0; rank < 4; ++rank) {
    LoaderOptions o;
    o.batch_sampler = std::make_shared<DistributedBatchSampler>(10, 2, 4, rank);
    DataLoader loader(ds, o);
    int batches = 0;
    for (const Batch& b : loader) {
      ++batches;
      for (int64_t i : Indices(b)) seen.push_back(i);
    }
    EXPECT_EQ(batches, 2) << "rank " << rank;
  }
  EXPECT_EQ(seen.size(), 12u);  // padded to 12 = 3 per rank
}

TEST(DataLoader, DynamicBatchesArePadded) {
  std::vector<int64_t> lengths;
  for (int i = 0; i < 40; ++i) lengths.push_back(1 + (i * 7) % 23);
  auto ds = std::make_shared<VariableDataset>(lengths);
  DynamicBatchSampler::Options dyn;
  dyn.max_tokens = 64;
  dyn.seed = 3;
  LoaderOptions o;
  o.batch_sampler = std::make_shared<DynamicBatchSampler>(*ds, dyn);
  o.num_workers = 2;
  DataLoader loader(ds, o);
  int64_t total = 0;
  for (const Batch& b : loader) {
    const Shape& s = b["tokens"].shape();
    EXPECT_LE(s[0] * s[1], 64 < s[1] ? s[1] : 64);
    total += b.size();
  }
  EXPECT_EQ(total, 40);
}

TEST(DataLoader, SubsetAndConcatThroughTheLoader) {
  auto a = std::make_shared<IndexDataset>(5);
  auto b = std::make_shared<IndexDataset>(3);
  auto cat = std::make_shared<Concat>(std::vector<std::shared_ptr<const Dataset>>{a, b});
  auto sub = std::make_shared<Subset>(cat, std::vector<int64_t>{7, 0, 5});
  LoaderOptions o;
  o.batch_size = 3;
  DataLoader loader(sub, o);
  Batch batch = *loader.Next();
  EXPECT_EQ(Indices(batch), (std::vector<int64_t>{2, 0, 0}));
}

// --- IterableDataset ---

TEST(DataLoader, IterableDatasetDeliversEverySampleOnce) {
  for (int workers : {0, 1, 3}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    DataLoader loader(std::make_shared<RangeStreams>(25), o);
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::multiset<int64_t> seen;
      for (const Batch& b : loader) for (int64_t i : Indices(b)) seen.insert(i);
      EXPECT_EQ(seen.size(), 25u) << "workers=" << workers;
      for (int64_t i = 0; i < 25; ++i) EXPECT_EQ(seen.count(i), 1u);
    }
    EXPECT_THROW(loader.size(), Error);
  }
}

TEST(DataLoader, IterableRoundRobinMatchesTorchOrder) {
  LoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<RangeStreams>(8), o);
  std::vector<std::vector<int64_t>> batches;
  for (const Batch& b : loader) batches.push_back(Indices(b));
  // Worker 0 streams 0,2,4,6 and worker 1 streams 1,3,5,7; batches alternate.
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

}  // namespace
}  // namespace feedline

namespace feedline {
namespace {

TEST(DataLoader, AFailingWorkerInitIsRaisedToTheCaller) {
  for (bool iterable : {false, true}) {
    LoaderOptions o;
    o.batch_size = 2;
    o.num_workers = 2;
    o.worker_init = [](int worker) {
      if (worker == 1) throw std::runtime_error("no GPU here");
    };
    std::unique_ptr<DataLoader> loader =
        iterable ? std::make_unique<DataLoader>(std::make_shared<RangeStreams>(1000), o)
                 : std::make_unique<DataLoader>(std::make_shared<SlowDataset>(
                                                    1000, std::chrono::milliseconds(1)),
                                                o);
    try {
      while (loader->Next()) {
      }
      FAIL() << "no error, iterable=" << iterable;
    } catch (const WorkerInitError& e) {
      EXPECT_EQ(e.worker(), 1);
      EXPECT_NE(std::string(e.what()).find("worker_init failed in worker 1: no GPU here"),
                std::string::npos);
    }
  }
}

}  // namespace
}  // namespace feedline
