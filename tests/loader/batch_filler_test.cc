// BatchFiller (src/loader/batch_filler.h): a task's rows loaded into their
// slot, the batch made ready by the task that finishes it, a failing row
// under each error policy, collate failures, and what is no bad sample (out
// of memory, an interrupt); the test plays the worker and the consumer
// (engine_parts.h).
#include "src/loader/batch_filler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "feedline/batch.h"
#include "feedline/collate.h"
#include "feedline/error.h"
#include "feedline/loader_options.h"
#include "loader/engine_parts.h"
#include "loader/test_datasets.h"

namespace feedline::testing {
namespace {

using internal::Slot;
using internal::Task;

LoaderOptions Options(ErrorPolicy policy) {
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 1;
  options.error_policy = policy;
  return options;
}

// Claims batch 0 whole, loads it and takes it as the consumer; null if it
// is not ready.
Slot* LoadFirstBatch(EngineParts& parts) {
  parts.StartEpoch(0);
  std::optional<Task> task = parts.Claim(4);
  if (!task) return nullptr;
  parts.Load(*task);
  return parts.TakeReady();
}

// The SampleError that delivering batch 0 throws; one of kind kCancelled if
// it is not ready or delivered.
SampleError RaisedByFirstBatch(EngineParts& parts) {
  Slot* slot = LoadFirstBatch(parts);
  if (slot == nullptr) return SampleError(FailureKind::kCancelled, "", "batch 0 is not ready");
  try {
    parts.Deliver(slot);
  } catch (const SampleError& e) {
    return e;
  }
  return SampleError(FailureKind::kCancelled, "", "batch 0 was delivered");
}

// Sample i: "index" = i, but sample `bad` runs `fail` instead.
class ThrowingDataset : public Dataset {
 public:
  ThrowingDataset(int64_t bad, std::function<void()> fail) : bad_(bad), fail_(std::move(fail)) {}
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == bad_) fail_();
    out.SetScalar<int64_t>("index", index);
  }

 private:
  int64_t bad_;
  std::function<void()> fail_;
};

// What Python's KeyboardInterrupt is to the engine: not a std::exception.
struct Interrupt {};

TEST(BatchFiller, TheTaskThatFinishesTheLastRowMakesTheBatchReady) {
  EngineParts parts(std::make_shared<IndexDataset>(8), Options(ErrorPolicy::kRaise));
  parts.StartEpoch(0);
  const Task head = *parts.Claim(2);
  const Task tail = *parts.Claim(2);
  ASSERT_EQ(head.slot, tail.slot);
  parts.Load(tail);
  EXPECT_EQ(parts.TakeReady(), nullptr);
  parts.Load(head);
  Slot* slot = parts.TakeReady();
  ASSERT_EQ(slot, head.slot);
  std::optional<Batch> batch = parts.Deliver(slot);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(Indices(*batch), (std::vector<int64_t>{0, 1, 2, 3}));
}

// Rows that each cost a round trip go to the backend together; others one
// per call (loading cheap thread rows several per call was measured slower:
// 0.95x the loader overhead bench without workers, 7 alternating rounds,
// 2026-12-03); with a timeout, which watches each row, always one per call.
TEST(BatchFiller, OnlyRoundTripRowsGoToTheBackendTogetherAndNotUnderATimeout) {
  const std::vector<int64_t> first_batch = {0, 1, 2, 3};
  EngineParts together(std::make_shared<IndexDataset>(8), Options(ErrorPolicy::kRaise),
                       /*round_trip_rows=*/true);
  Slot* slot = LoadFirstBatch(together);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(Indices(*together.Deliver(slot)), first_batch);
  EXPECT_EQ(together.rows_per_load_call(), (std::vector<size_t>{4}));
  // Every row of the batch in one call: a worker that collates may collate
  // it in the same exchange.
  EXPECT_EQ(together.whole_batch_load_calls(), (std::vector<bool>{true}));

  EngineParts threads(std::make_shared<IndexDataset>(8), Options(ErrorPolicy::kRaise));
  slot = LoadFirstBatch(threads);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(Indices(*threads.Deliver(slot)), first_batch);
  EXPECT_EQ(threads.rows_per_load_call(), (std::vector<size_t>{1, 1, 1, 1}));

  LoaderOptions watched = Options(ErrorPolicy::kRaise);
  watched.timeout = std::chrono::milliseconds(60000);
  EngineParts one_by_one(std::make_shared<IndexDataset>(8), watched, /*round_trip_rows=*/true);
  slot = LoadFirstBatch(one_by_one);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(Indices(*one_by_one.Deliver(slot)), first_batch);
  EXPECT_EQ(one_by_one.rows_per_load_call(), (std::vector<size_t>{1, 1, 1, 1}));
  EXPECT_EQ(one_by_one.whole_batch_load_calls(), (std::vector<bool>(4, false)));
}

TEST(BatchFiller, ARowThatFailsAmongRowsLoadedTogetherIsReplacedAloneInItsPlace) {
  EngineParts parts(std::make_shared<ThrowingDataset>(
                        2, [] { throw std::runtime_error("bad sample"); }),
                    Options(ErrorPolicy::kReplace), /*round_trip_rows=*/true);
  Slot* slot = LoadFirstBatch(parts);
  ASSERT_NE(slot, nullptr);
  const std::vector<int64_t> indices = Indices(*parts.Deliver(slot));
  ASSERT_EQ(indices.size(), 4u);
  EXPECT_EQ(indices[0], 0);
  EXPECT_EQ(indices[1], 1);
  EXPECT_NE(indices[2], 2);
  EXPECT_EQ(indices[3], 3);
  // The four rows in one call, then the substitute alone.
  EXPECT_EQ(parts.rows_per_load_call(), (std::vector<size_t>{4, 1}));
  // The substitute is no batch of its own.
  EXPECT_EQ(parts.whole_batch_load_calls(), (std::vector<bool>{true, false}));
}

TEST(BatchFiller, UnderRaiseTheBatchRaisesTheRowsSampleError) {
  EngineParts parts(std::make_shared<FaultyDataset>(8, std::set<int64_t>{2}),
                    Options(ErrorPolicy::kRaise));
  const SampleError e = RaisedByFirstBatch(parts);
  EXPECT_EQ(e.reason(), "decode");
  EXPECT_EQ(e.index(), 2);
  EXPECT_EQ(e.source(), "file2.jpg");
  EXPECT_EQ(parts.stats().Snapshot().errors, 1);
}

TEST(BatchFiller, UnderSkipTheBatchComesOutWithoutTheRow) {
  EngineParts parts(std::make_shared<FaultyDataset>(8, std::set<int64_t>{2}),
                    Options(ErrorPolicy::kSkip));
  Slot* slot = LoadFirstBatch(parts);
  ASSERT_NE(slot, nullptr);
  std::optional<Batch> batch = parts.Deliver(slot);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(Indices(*batch), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(parts.stats().Snapshot().skipped, 1);
}

TEST(BatchFiller, UnderReplaceASubstituteTakesTheRow) {
  const std::set<int64_t> bad = {2};
  EngineParts parts(std::make_shared<FaultyDataset>(8, bad), Options(ErrorPolicy::kReplace));
  Slot* slot = LoadFirstBatch(parts);
  ASSERT_NE(slot, nullptr);
  // The first substitute drawn for row 2 that loads.
  int attempt = 1;
  while (bad.count(parts.failure_policy().SubstituteIndex(0, 2, attempt)) > 0) ++attempt;
  const int64_t substitute = parts.failure_policy().SubstituteIndex(0, 2, attempt);
  std::optional<Batch> batch = parts.Deliver(slot);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(Indices(*batch), (std::vector<int64_t>{0, 1, substitute, 3}));
  EXPECT_EQ(batch->indices()[2], substitute);
  EXPECT_EQ(parts.stats().Snapshot().replaced, 1);
}

TEST(BatchFiller, OutOfMemoryEndsTheEpochInsteadOfSkippingTheRow) {
  EngineParts parts(std::make_shared<ThrowingDataset>(1, [] { throw std::bad_alloc(); }),
                    Options(ErrorPolicy::kSkip));
  LoadFirstBatch(parts);
  EXPECT_THROW(parts.ThrowPending(), std::bad_alloc);
  EXPECT_EQ(parts.stats().Snapshot().skipped, 0);
}

TEST(BatchFiller, AnInterruptEndsTheEpochInsteadOfReplacingTheRow) {
  EngineParts parts(std::make_shared<ThrowingDataset>(1, [] { throw Interrupt(); }),
                    Options(ErrorPolicy::kReplace));
  LoadFirstBatch(parts);
  EXPECT_THROW(parts.ThrowPending(), Interrupt);
  EXPECT_EQ(parts.stats().Snapshot().replaced, 0);
}

TEST(BatchFiller, AnExceptionOfTheDatasetIsASampleErrorOfItsRow) {
  EngineParts parts(
      std::make_shared<ThrowingDataset>(3, [] { throw std::runtime_error("no such file"); }),
      Options(ErrorPolicy::kRaise));
  const SampleError e = RaisedByFirstBatch(parts);
  EXPECT_EQ(e.reason(), "exception");
  EXPECT_EQ(e.index(), 3);
  EXPECT_EQ(e.message(), "no such file");
}

// A collate function that throws `failure` for every batch.
LoaderOptions FailingCollate(std::function<void()> failure) {
  LoaderOptions options = Options(ErrorPolicy::kRaise);
  options.collate_fn = [failure = std::move(failure)](std::span<const Sample* const>,
                                                      BatchBuilder&) { failure(); };
  return options;
}

TEST(BatchFiller, ACollateFailureRaisesForItsBatchWithReasonCollate) {
  EngineParts parts(std::make_shared<IndexDataset>(8),
                    FailingCollate([] { throw std::runtime_error("cannot stack"); }));
  const SampleError e = RaisedByFirstBatch(parts);
  EXPECT_EQ(e.reason(), "collate");
  EXPECT_EQ(e.message(), "cannot stack (batch 0)");
}

TEST(BatchFiller, ACollateSampleErrorKeepsItsOwnReasonAndSource) {
  EngineParts parts(std::make_shared<IndexDataset>(8), FailingCollate([] {
                      throw SampleError(FailureKind::kShape, "labels.csv", "rows differ");
                    }));
  const SampleError e = RaisedByFirstBatch(parts);
  EXPECT_EQ(e.reason(), "shape");
  EXPECT_EQ(e.source(), "labels.csv");
  EXPECT_EQ(e.message(), "rows differ (batch 0)");
}

// Sample i: "index" = i, having decoded one image.
class DecodingDataset : public Dataset {
 public:
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    ctx.CountImagesDecoded();
    out.SetScalar<int64_t>("index", index);
  }
};

// A consumer that has a batch may read the loader's statistics at once: what
// its rows cost is counted before the batch can be taken (here, when the
// batch collates, after the last of its rows).
TEST(BatchFiller, ABatchsRowsAreCountedBeforeItCanBeTaken) {
  const internal::StatsCollector* stats = nullptr;
  std::vector<StatsSnapshot> at_collation;
  LoaderOptions options = Options(ErrorPolicy::kRaise);
  options.collate_fn = [&](std::span<const Sample* const>, BatchBuilder&) {
    at_collation.push_back(stats->Snapshot());
  };
  EngineParts parts(std::make_shared<DecodingDataset>(), options);
  stats = &parts.stats();
  parts.StartEpoch(0);
  const Task head = *parts.Claim(2);
  const Task tail = *parts.Claim(2);
  parts.Load(tail);
  EXPECT_EQ(parts.stats().Snapshot().images_decoded, 2);
  parts.Load(head);
  ASSERT_EQ(at_collation.size(), 1u);
  EXPECT_EQ(at_collation[0].images_decoded, 4);
  EXPECT_EQ(at_collation[0].samples, 4);
  EXPECT_NE(parts.TakeReady(), nullptr);
}

TEST(BatchFiller, OutOfMemoryInCollateEndsTheEpoch) {
  EngineParts parts(std::make_shared<IndexDataset>(8),
                    FailingCollate([] { throw std::bad_alloc(); }));
  LoadFirstBatch(parts);
  EXPECT_THROW(parts.ThrowPending(), std::bad_alloc);
}

}  // namespace
}  // namespace feedline::testing
