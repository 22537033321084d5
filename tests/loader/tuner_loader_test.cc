// num_workers / prefetch_factor = kAuto through the public DataLoader: the
// tuner may change the active workers and the slots while it runs, and the
// batches stay bit-identical to those of fixed settings.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/iterable_dataset.h"
#include "loader/test_datasets.h"

namespace feedline {
namespace {

using testing::IndexDataset;

// IndexDataset whose samples take ~`sleep_us` (I/O-like), so the loader's
// windows fill in a short test.
class PacedDataset : public IndexDataset {
 public:
  PacedDataset(int64_t n, int sleep_us) : IndexDataset(n, /*fixed=*/true), sleep_us_(sleep_us) {}
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    IndexDataset::Get(index, out, ctx);
  }

 private:
  int sleep_us_;
};

// Every byte of every batch of `epochs` epochs; the loop sleeps `step_us`
// per batch in the first epoch only (the step time changes).
std::vector<std::vector<char>> LoadEpochs(DataLoader& loader, int epochs, int step_us) {
  std::vector<std::vector<char>> out;
  for (int e = 0; e < epochs; ++e) {
    for (const Batch& b : loader) {
      std::vector<char> bytes;
      for (int f = 0; f < b.num_fields(); ++f) {
        const Tensor& t = b.field(f);
        const char* p = static_cast<const char*>(t.raw());
        bytes.insert(bytes.end(), p, p + t.bytes());
      }
      out.push_back(std::move(bytes));
      if (e == 0 && step_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(step_us));
    }
  }
  return out;
}

LoaderOptions Options(int workers, int prefetch) {
  LoaderOptions o;
  o.batch_size = 8;
  o.shuffle = true;
  o.seed = 77;
  o.num_workers = workers;
  o.prefetch_factor = prefetch;
  o.persistent_workers = true;
  return o;
}

TEST(TunerLoader, AutoGivesTheBatchesOfFixedSettings) {
  auto dataset = std::make_shared<PacedDataset>(1200, 100);
  DataLoader fixed(dataset, Options(2, 2));
  const auto expected = LoadEpochs(fixed, 3, 0);

  DataLoader tuned(dataset, Options(kAuto, kAuto));
  // A slow step first (the tuner gives workers and slots back), then none
  // (it takes them again).
  const auto got = LoadEpochs(tuned, 3, 3000);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t b = 0; b < got.size(); ++b) ASSERT_EQ(got[b], expected[b]) << "batch " << b;

  const StatsSnapshot stats = tuned.stats();
  EXPECT_TRUE(stats.tuner.enabled);
  EXPECT_GE(stats.tuner.workers, 1);
  EXPECT_LE(stats.tuner.workers, AutoMaxWorkers());
  EXPECT_EQ(stats.tuner.max_workers, AutoMaxWorkers());
  EXPECT_GE(stats.tuner.slots, 2);
  EXPECT_GT(stats.tuner.slot_bytes, 0);
  EXPECT_EQ(stats.tuner.decisions, static_cast<int64_t>(stats.tuner.log.size()));
  RecordProperty("tuner_decisions", static_cast<int>(stats.tuner.decisions));
  // The loader starts one thread per core share, whatever the tuner uses.
  EXPECT_EQ(tuned.options().num_workers, AutoMaxWorkers());
}

TEST(TunerLoader, FixedSettingsHaveNoTuner) {
  DataLoader loader(std::make_shared<IndexDataset>(40), Options(2, 2));
  for (const Batch& b : loader) (void)b;
  EXPECT_FALSE(loader.stats().tuner.enabled);
  EXPECT_TRUE(loader.stats().tuner.log.empty());
}

TEST(TunerLoader, AutoPrefetchWithoutWorkersLoadsInTheCallersThread) {
  DataLoader loader(std::make_shared<IndexDataset>(40), Options(0, kAuto));
  int64_t n = 0;
  for (const Batch& b : loader) n += b.size();
  EXPECT_EQ(n, 40);
  EXPECT_FALSE(loader.stats().tuner.enabled);
}

TEST(TunerLoader, NegativeValuesOtherThanAutoAreRefused) {
  EXPECT_THROW(DataLoader(std::make_shared<IndexDataset>(4), Options(-2, 2)), Error);
  EXPECT_THROW(DataLoader(std::make_shared<IndexDataset>(4), Options(2, -5)), Error);
  LoaderOptions o = Options(kAuto, kAuto);
  o.memory_budget_bytes = -1;
  EXPECT_THROW(DataLoader(std::make_shared<IndexDataset>(4), o), Error);
}

// A stream per worker: "auto" is decided once (one worker per core share).
class CountingStream : public IterableDataset {
 public:
  std::unique_ptr<SampleStream> Open(int worker, int workers, int64_t) const override {
    struct Stream : SampleStream {
      int64_t next, step, end;
      bool Next(Sample& out, SampleContext&) override {
        if (next >= end) return false;
        out.SetScalar<int64_t>("index", next);
        next += step;
        return true;
      }
    };
    auto s = std::make_unique<Stream>();
    s->next = worker < 0 ? 0 : worker;
    s->step = workers > 0 ? workers : 1;
    s->end = 30;
    return s;
  }
};

TEST(TunerLoader, AnIterableDatasetResolvesAutoOnce) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = kAuto;
  o.prefetch_factor = kAuto;
  DataLoader loader(std::make_shared<CountingStream>(), o);
  EXPECT_EQ(loader.options().num_workers, AutoMaxWorkers());
  EXPECT_EQ(loader.options().prefetch_factor, 2);
  int64_t n = 0;
  for (const Batch& b : loader) n += b.size();
  EXPECT_EQ(n, 30);
  EXPECT_FALSE(loader.stats().tuner.enabled);
}

}  // namespace
}  // namespace feedline
