// Fault injection for the loader, in the spirit of LevelDB's: a sample that
// never returns in time, an interrupt or an allocation failure raised where a
// sample, a collate function or the engine itself runs, and misuse of the
// results. Each case is bounded in time and asserts the exact outcome.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "loader/allocation_hooks.h"
#include "loader/test_datasets.h"

namespace feedline {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::FaultyDataset;
using testing::IndexDataset;
using testing::Indices;
using testing::SlowDataset;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A gate the slow sample waits at: closed, it holds the sample for up to 5 s
// (far past every timeout here); opened, it lets it return at once, so that
// a test ends quickly.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> returned{0};  // slow samples that came back

  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return open; });
  }
};

// Sample i: "index" = i. Sample `slow` waits at the gate; it writes its
// value (in place, with `fixed`) after the gate opens, as a late thread would.
class GatedDataset : public Dataset {
 public:
  GatedDataset(int64_t n, int64_t slow, std::shared_ptr<Gate> gate, bool fixed = false)
      : n_(n), slow_(slow), gate_(std::move(gate)), fixed_(fixed) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == slow_) {
      gate_->Wait();
      out.SetScalar<int64_t>("index", 1000 + index);  // the late result, recognizable
      gate_->returned.fetch_add(1);
      return;
    }
    out.SetScalar<int64_t>("index", index);
  }
  std::string Source(int64_t index) const override { return "file" + std::to_string(index) + ".jpg"; }
  std::vector<FieldSpec> FixedFields() const override {
    if (!fixed_) return {};
    return {{"index", DType::kI64, Shape{}}};
  }

 private:
  int64_t n_;
  int64_t slow_;
  std::shared_ptr<Gate> gate_;
  bool fixed_;
};

// Every batch of one epoch as its "index" values; a SampleError becomes {-1}
// followed by its index, so that the sequence records where it was raised.
std::vector<std::vector<int64_t>> Drain(DataLoader& loader, std::vector<std::string>* errors) {
  std::vector<std::vector<int64_t>> out;
  for (int guard = 0; guard < 1000; ++guard) {
    try {
      std::optional<Batch> batch = loader.Next();
      if (!batch) break;
      out.push_back(Indices(*batch));
    } catch (const TimeoutError& e) {
      out.push_back({-1, e.index()});
      errors->push_back("TimeoutError " + e.source() + " " + e.reason());
    } catch (const SampleError& e) {
      out.push_back({-1, e.index()});
      errors->push_back(std::string("SampleError ") + e.what());
    }
  }
  return out;
}

LoaderOptions Options(int workers, ErrorPolicy policy, milliseconds timeout) {
  LoaderOptions o;
  o.batch_size = 2;
  o.num_workers = workers;
  o.error_policy = policy;
  o.timeout = timeout;
  o.seed = 7;
  return o;
}

// --- Timeouts -------------------------------------------------------------

class TimeoutTest : public ::testing::TestWithParam<int> {};

TEST_P(TimeoutTest, RaiseThrowsTimeoutErrorOnceThenGoesOn) {
  auto gate = std::make_shared<Gate>();
  DataLoader loader(std::make_shared<GatedDataset>(8, 3, gate),
                    Options(GetParam(), ErrorPolicy::kRaise, milliseconds(100)));
  const auto start = Clock::now();
  std::vector<std::string> errors;
  const auto batches = Drain(loader, &errors);
  // With one worker, the batches after the stuck sample come from the
  // thread that replaced it.
  EXPECT_LT(SecondsSince(start), 2.0);
  gate->Open();
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1}, {-1, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(errors, std::vector<std::string>{"TimeoutError file3.jpg timeout"});
  EXPECT_EQ(loader.stats().errors, 1);
  EXPECT_EQ(loader.stats().errors_by_reason.at("timeout"), 1);
}

TEST_P(TimeoutTest, SkipDropsTheRowOnce) {
  auto gate = std::make_shared<Gate>();
  DataLoader loader(std::make_shared<GatedDataset>(8, 3, gate),
                    Options(GetParam(), ErrorPolicy::kSkip, milliseconds(100)));
  const auto start = Clock::now();
  std::vector<std::string> errors;
  const auto batches = Drain(loader, &errors);
  EXPECT_LT(SecondsSince(start), 2.0);
  gate->Open();
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1}, {2}, {4, 5}, {6, 7}}));
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(loader.stats().errors, 1);
  EXPECT_EQ(loader.stats().skipped, 1);
}

TEST_P(TimeoutTest, ReplaceGivesTheBatchesOfAFailedSample) {
  auto gate = std::make_shared<Gate>();
  DataLoader loader(std::make_shared<GatedDataset>(8, 3, gate),
                    Options(GetParam(), ErrorPolicy::kReplace, milliseconds(100)));
  std::vector<std::string> errors;
  const auto batches = Drain(loader, &errors);
  gate->Open();
  // The same substitutes as for a sample that fails at once.
  DataLoader reference(std::make_shared<FaultyDataset>(8, std::set<int64_t>{3}),
                       Options(0, ErrorPolicy::kReplace, milliseconds(0)));
  std::vector<std::string> reference_errors;
  EXPECT_EQ(batches, Drain(reference, &reference_errors));
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(loader.stats().replaced, 1);
  EXPECT_EQ(loader.stats().errors_by_reason.at("timeout"), 1);
}

TEST_P(TimeoutTest, TheLateResultNeverReachesABatch) {
  // Fixed fields are written in place: the late thread writes into the slot
  // it was given, which must not be the one delivered.
  auto gate = std::make_shared<Gate>();
  DataLoader loader(std::make_shared<GatedDataset>(8, 3, gate, /*fixed=*/true),
                    Options(GetParam(), ErrorPolicy::kSkip, milliseconds(100)));
  std::optional<Batch> first = loader.Next();
  std::optional<Batch> second = loader.Next();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(Indices(*second), (std::vector<int64_t>{2}));
  gate->Open();  // the late sample now writes 1003 into its row
  const auto start = Clock::now();
  while (gate->returned.load() == 0 && SecondsSince(start) < 5) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_EQ(gate->returned.load(), 1);
  std::vector<std::vector<int64_t>> rest;
  while (std::optional<Batch> b = loader.Next()) rest.push_back(Indices(*b));
  EXPECT_EQ(Indices(*first), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Indices(*second), (std::vector<int64_t>{2}));
  EXPECT_EQ(rest, (std::vector<std::vector<int64_t>>{{4, 5}, {6, 7}}));
  // The next epoch loads the sample in time and gets it.
  std::vector<int64_t> all;
  for (const Batch& b : loader) {
    for (int64_t v : Indices(b)) all.push_back(v);
  }
  EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 2, 1003, 4, 5, 6, 7}));
}

INSTANTIATE_TEST_SUITE_P(Workers, TimeoutTest, ::testing::Values(1, 2));

TEST(Timeout, CallerThreadFailsALateSampleWhenItReturns) {
  // num_workers = 0: nobody can interrupt the caller's own thread; the late
  // sample fails once it returns, and its result is discarded.
  for (ErrorPolicy policy : {ErrorPolicy::kRaise, ErrorPolicy::kSkip}) {
    DataLoader loader(std::make_shared<SlowDataset>(6, milliseconds(150), 3),
                      Options(0, policy, milliseconds(50)));
    std::vector<std::string> errors;
    const auto batches = Drain(loader, &errors);
    if (policy == ErrorPolicy::kRaise) {
      EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1}, {-1, 3}, {4, 5}}));
      EXPECT_EQ(errors, std::vector<std::string>{"TimeoutError slow3 timeout"});
    } else {
      EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1}, {2}, {4, 5}}));
    }
    EXPECT_EQ(loader.stats().errors_by_reason.at("timeout"), 1);
  }
}

TEST(Timeout, DestroyingTheLoaderWaitsOnlyForTheStuckSample) {
  auto gate = std::make_shared<Gate>();
  auto loader = std::make_unique<DataLoader>(std::make_shared<GatedDataset>(8, 3, gate),
                                             Options(2, ErrorPolicy::kSkip, milliseconds(50)));
  ASSERT_TRUE(loader->Next());
  ASSERT_TRUE(loader->Next());  // the stuck sample's batch, without it
  std::thread opener([&] {
    std::this_thread::sleep_for(milliseconds(200));
    gate->Open();
  });
  const auto start = Clock::now();
  loader.reset();  // joins the stuck thread once its sample returns
  const double waited = SecondsSince(start);
  opener.join();
  EXPECT_LT(waited, 2.0);
  EXPECT_EQ(gate->returned.load(), 1);
}

// Items 0..5 of one stream; item 2 takes 150 ms.
class SlowItemStreams : public IterableDataset {
 public:
  std::unique_ptr<SampleStream> Open(int, int, int64_t) const override {
    class Stream : public SampleStream {
     public:
      bool Next(Sample& out, SampleContext&) override {
        if (next_ >= 6) return false;
        if (next_ == 2) std::this_thread::sleep_for(milliseconds(150));
        out.SetScalar<int64_t>("index", next_++);
        return true;
      }

     private:
      int64_t next_ = 0;
    };
    return std::make_unique<Stream>();
  }
};

TEST(Timeout, AStreamItemThatReturnsLateFailsOnce) {
  for (ErrorPolicy policy : {ErrorPolicy::kRaise, ErrorPolicy::kSkip}) {
    DataLoader loader(std::make_shared<SlowItemStreams>(), Options(1, policy, milliseconds(50)));
    std::vector<std::string> errors;
    const auto batches = Drain(loader, &errors);
    if (policy == ErrorPolicy::kRaise) {
      EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1}, {-1, 2}, {3, 4}, {5}}));
      EXPECT_EQ(errors, std::vector<std::string>{"TimeoutError  timeout"});
    } else {
      EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1}, {3, 4}, {5}}));
    }
    EXPECT_EQ(loader.stats().errors_by_reason.at("timeout"), 1);
  }
}

// --- Interrupts -----------------------------------------------------------

// Not a std::exception: what the Python binding throws for KeyboardInterrupt.
struct Interruption {};

class InterruptingDataset : public Dataset {
 public:
  explicit InterruptingDataset(int64_t at) : at_(at) {}
  int64_t size() const override { return 16; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == at_ && armed.load()) throw Interruption{};
    if (index == at_ + 1 && armed.load()) throw SampleError(FailureKind::kDecode, "", "also broken");
    out.SetScalar<int64_t>("index", index);
  }
  mutable std::atomic<bool> armed{true};

 private:
  int64_t at_;
};

class InterruptTest : public ::testing::TestWithParam<std::tuple<int, ErrorPolicy>> {};

TEST_P(InterruptTest, PassesThroughAsItselfWhateverThePolicy) {
  const auto [workers, policy] = GetParam();
  auto dataset = std::make_shared<InterruptingDataset>(5);
  LoaderOptions o = Options(workers, policy, milliseconds(0));
  DataLoader loader(dataset, o);
  int interrupted = 0;
  int sample_errors = 0;
  int batches = 0;
  for (int i = 0; i < 20; ++i) {
    try {
      if (!loader.Next()) break;
      ++batches;
    } catch (const Interruption&) {
      ++interrupted;
      break;
    } catch (const SampleError&) {
      ++sample_errors;  // the broken sample after it, under raise
    }
  }
  EXPECT_EQ(interrupted, 1);
  EXPECT_EQ(sample_errors, 0);
  EXPECT_LE(batches, 2);  // batches [0, 1] and [2, 3] may come first
  // The loader stays usable: a new epoch runs in full, with no leftover of
  // the interrupt.
  dataset->armed.store(false);
  int64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  EXPECT_EQ(samples, 16);
}

INSTANTIATE_TEST_SUITE_P(
    Loader, InterruptTest,
    ::testing::Combine(::testing::Values(0, 2),
                       ::testing::Values(ErrorPolicy::kRaise, ErrorPolicy::kSkip,
                                         ErrorPolicy::kReplace)));

// --- Allocation failure ---------------------------------------------------

class OutOfMemoryDataset : public Dataset {
 public:
  int64_t size() const override { return 16; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == 5) throw std::bad_alloc();
    out.SetScalar<int64_t>("index", index);
  }
};

class AllocationFailureTest : public ::testing::TestWithParam<int> {};

TEST_P(AllocationFailureTest, InASampleIsThrownNotASkippedSample) {
  LoaderOptions o = Options(GetParam(), ErrorPolicy::kSkip, milliseconds(0));
  DataLoader loader(std::make_shared<OutOfMemoryDataset>(), o);
  bool thrown = false;
  for (int i = 0; i < 20 && !thrown; ++i) {
    try {
      if (!loader.Next()) break;
    } catch (const std::bad_alloc&) {
      thrown = true;
    }
  }
  EXPECT_TRUE(thrown);
  EXPECT_EQ(loader.stats().skipped, 0);
}

TEST_P(AllocationFailureTest, InACollateFunctionIsThrown) {
  LoaderOptions o = Options(GetParam(), ErrorPolicy::kSkip, milliseconds(0));
  o.collate_fn = [](std::span<const Sample* const>, BatchBuilder&) { throw std::bad_alloc(); };
  DataLoader loader(std::make_shared<IndexDataset>(8), o);
  EXPECT_THROW(loader.Next(), std::bad_alloc);
}

TEST_P(AllocationFailureTest, SizingABatchSlotIsThrownAndTheLoaderRecovers) {
  // One batch of 4096 rows: its per-row buffers (hundreds of kB) cannot be
  // allocated; nothing else in an epoch needs 64 kB at once.
  LoaderOptions o;
  o.batch_size = 4096;
  o.num_workers = GetParam();
  DataLoader loader(std::make_shared<IndexDataset>(4096, /*fixed=*/true), o);
  {
    testing::FailingAllocations failing(64 * 1024);
    EXPECT_THROW(loader.Next(), std::bad_alloc);
  }
  int64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  EXPECT_EQ(samples, 4096);
}

INSTANTIATE_TEST_SUITE_P(Workers, AllocationFailureTest, ::testing::Values(0, 2));

// --- Error accounting and messages ----------------------------------------

// Fails every index but the last, counting the failed loads.
class MostlyBrokenDataset : public Dataset {
 public:
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index != 7) {
      failed.fetch_add(1);
      throw SampleError(FailureKind::kDecode, "file" + std::to_string(index), "corrupt");
    }
    out.SetScalar<int64_t>("index", index);
  }
  mutable std::atomic<int64_t> failed{0};
};

TEST(ErrorAccounting, ReplaceCountsFailedSubstitutesApartFromErrors) {
  auto dataset = std::make_shared<MostlyBrokenDataset>();
  LoaderOptions o = Options(2, ErrorPolicy::kReplace, milliseconds(0));
  o.max_replace_attempts = 64;
  DataLoader loader(dataset, o);
  int64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  EXPECT_EQ(samples, 8);
  const StatsSnapshot s = loader.stats();
  EXPECT_EQ(s.errors, 7);  // the samples asked for that failed
  EXPECT_EQ(s.errors_by_reason.at("decode"), 7);
  EXPECT_EQ(s.replaced, 7);
  EXPECT_GT(s.failed_substitutes, 0);
  EXPECT_EQ(s.errors + s.failed_substitutes, dataset->failed.load());
}

TEST(ErrorAccounting, GivingUpNamesTheSampleAskedFor) {
  std::set<int64_t> all;
  for (int64_t i = 0; i < 8; ++i) all.insert(i);
  LoaderOptions o = Options(0, ErrorPolicy::kReplace, milliseconds(0));
  o.batch_size = 1;
  o.max_replace_attempts = 3;
  DataLoader loader(std::make_shared<FaultyDataset>(8, all), o);
  try {
    loader.Next();
    FAIL() << "no error";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.index(), 0);
    EXPECT_EQ(e.source(), "file0.jpg");
    EXPECT_EQ(e.reason(), "decode");
    EXPECT_NE(e.message().find("corrupt data; the 2 substitutes tried for it failed too"),
              std::string::npos)
        << e.message();
  }
  EXPECT_EQ(loader.stats().errors, 1);
  EXPECT_EQ(loader.stats().failed_substitutes, 2);
}

TEST(ErrorAccounting, ACollateErrorIsPrefixedOnce) {
  LoaderOptions o = Options(2, ErrorPolicy::kRaise, milliseconds(0));
  o.collate_fn = [](std::span<const Sample* const>, BatchBuilder&) {
    throw SampleError(FailureKind::kCollate, "", "bad batch");
  };
  DataLoader loader(std::make_shared<IndexDataset>(4), o);
  try {
    loader.Next();
    FAIL() << "no error";
  } catch (const SampleError& e) {
    EXPECT_STREQ(e.what(), "sample: collate: bad batch (batch 0)");
  }
}

// --- Responsiveness and memory --------------------------------------------

TEST(CallerThread, TryNextReturnsWithinItsWaitWhileABatchLoads) {
  // num_workers = 0 loads in the caller's thread: a 64-sample batch takes
  // ~640 ms, but TryNext must come back on time (the Python binding checks
  // for Ctrl-C between calls).
  LoaderOptions o;
  o.batch_size = 64;
  DataLoader loader(std::make_shared<SlowDataset>(64, milliseconds(10)), o);
  Batch batch;
  const auto start = Clock::now();
  EXPECT_EQ(loader.TryNext(milliseconds(50), &batch), NextStatus::kPending);
  EXPECT_LT(SecondsSince(start), 0.3);
  int pending = 1;
  NextStatus status;
  while ((status = loader.TryNext(milliseconds(50), &batch)) == NextStatus::kPending) ++pending;
  EXPECT_EQ(status, NextStatus::kBatch);
  EXPECT_EQ(batch.size(), 64);
  EXPECT_GE(pending, 5);
}

TEST(HeldBatches, ReleasingThemAllGivesTheirMemoryBack) {
  LoaderOptions o;
  o.batch_size = 256;  // 6 kB of fixed fields per batch
  DataLoader loader(std::make_shared<IndexDataset>(256 * 40, /*fixed=*/true), o);
  {
    // Two batches held at once: the pool's own slots (its limit, 2) exist
    // now; slots are created only when needed, so one epoch of dropped
    // batches would have made one.
    std::vector<Batch> two;
    for (const Batch& b : loader) {
      two.push_back(b);
      if (two.size() == 2) break;
    }
  }
  const int64_t baseline = testing::LiveAlignedBytes();
  std::vector<Batch> held;
  for (const Batch& b : loader) held.push_back(b);  // list(loader)
  ASSERT_EQ(held.size(), 40u);
  const int64_t holding = testing::LiveAlignedBytes();
  EXPECT_GE(holding - baseline, 30 * 256 * 24);
  held.clear();
  EXPECT_LE(testing::LiveAlignedBytes(), baseline);
  // And the loader still runs.
  int64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  EXPECT_EQ(samples, 256 * 40);
}

}  // namespace
}  // namespace feedline
