// A C++ IterableDataset in worker processes (WorkerMode::kProcess): each
// worker's process runs its own pass, opened for its worker id, and the
// batches are those of worker threads; what Open throws is raised with what
// it was; a worker process that dies mid-pass ends that pass (its iterator
// cannot be replayed) as a failed item, kWorkerDied, for the error policy.
// Through the public DataLoader.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

// Worker w's pass: items w * 100 + 0 .. 9, each with its Rng draw and the
// loading pid. `kill_at` >= 0: worker 1's process dies (SIGKILL) at that item.
class Numbered : public IterableDataset {
 public:
  explicit Numbered(int kill_at = -1, bool open_fails = false)
      : kill_at_(kill_at), open_fails_(open_fails) {}

  class Stream : public SampleStream {
   public:
    Stream(int worker, int kill_at) : worker_(worker), kill_at_(kill_at) {}
    bool Next(Sample& out, SampleContext& ctx) override {
      if (next_ >= 10) return false;
      if (worker_ == 1 && next_ == kill_at_) ::kill(::getpid(), SIGKILL);
      out.SetScalar<int64_t>("item", worker_ * 100 + next_++);
      out.SetScalar<int64_t>("draw", static_cast<int64_t>(ctx.rng()() % 1000));
      out.SetScalar<int64_t>("pid", ::getpid());
      return true;
    }

   private:
    int worker_;
    int kill_at_;
    int next_ = 0;
  };

  std::unique_ptr<SampleStream> Open(int worker, int, int64_t) const override {
    if (open_fails_) throw SampleError(FailureKind::kIo, "shard-7", "cannot open the shard");
    return std::make_unique<Stream>(worker, kill_at_);
  }

 private:
  int kill_at_;
  bool open_fails_;
};

struct Items {
  std::vector<int64_t> items;
  std::vector<int64_t> draws;
  std::set<int64_t> pids;
};

Items LoadAll(DataLoader& loader) {
  Items out;
  for (const Batch& batch : loader) {
    for (int64_t r = 0; r < batch.size(); ++r) {
      out.items.push_back(batch["item"].data<int64_t>()[r]);
      out.draws.push_back(batch["draw"].data<int64_t>()[r]);
      out.pids.insert(batch["pid"].data<int64_t>()[r]);
    }
  }
  return out;
}

LoaderOptions StreamOptions(WorkerMode mode, ErrorPolicy policy = ErrorPolicy::kRaise) {
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 2;
  options.seed = 11;
  options.worker_mode = mode;
  options.error_policy = policy;
  return options;
}

TEST(NativeStreamInProcesses, GivesTheBatchesOfWorkerThreads) {
  DataLoader threads(std::make_shared<Numbered>(), StreamOptions(WorkerMode::kThread));
  DataLoader processes(std::make_shared<Numbered>(), StreamOptions(WorkerMode::kProcess));
  const Items on_threads = LoadAll(threads);
  const Items in_processes = LoadAll(processes);
  EXPECT_EQ(on_threads.items.size(), 20u);
  EXPECT_EQ(in_processes.items, on_threads.items);
  EXPECT_EQ(in_processes.draws, on_threads.draws);
  EXPECT_EQ(in_processes.pids.size(), 2u);
  EXPECT_EQ(in_processes.pids.count(::getpid()), 0u);
  // A second epoch opens fresh passes (fresh processes without persistent workers).
  const Items again = LoadAll(processes);
  EXPECT_EQ(again.items, on_threads.items);
}

TEST(NativeStreamInProcesses, AFailedOpenIsRaisedWithWhatOpenSaid) {
  DataLoader loader(std::make_shared<Numbered>(-1, /*open_fails=*/true),
                    StreamOptions(WorkerMode::kProcess));
  try {
    LoadAll(loader);
    FAIL() << "the failed Open went unnoticed";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kIo);
    EXPECT_THAT(e.what(), HasSubstr("IterableDataset::Open raised cannot open the shard"));
  }
}

TEST(NativeStreamInProcesses, AWorkerThatDiesMidPassEndsItsPassForTheErrorPolicy) {
  // Under skip: worker 1's items before its death are delivered, the death
  // is counted, and worker 0's pass is whole.
  DataLoader skip(std::make_shared<Numbered>(/*kill_at=*/5),
                  StreamOptions(WorkerMode::kProcess, ErrorPolicy::kSkip));
  const Items items = LoadAll(skip);
  std::multiset<int64_t> got(items.items.begin(), items.items.end());
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(got.count(i), 1u) << "worker 0's item " << i;
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(got.count(100 + i), 1u) << "worker 1's item " << i;
  EXPECT_EQ(got.size(), 15u);
  // Under raise: the death is raised, naming the worker and the signal.
  DataLoader raise(std::make_shared<Numbered>(/*kill_at=*/5), StreamOptions(WorkerMode::kProcess));
  try {
    LoadAll(raise);
    FAIL() << "the worker's death went unnoticed";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kWorkerDied);
    EXPECT_THAT(e.what(), HasSubstr("worker process 1 of the IterableDataset"));
    EXPECT_THAT(e.what(), HasSubstr("cannot be replayed"));
  }
}

}  // namespace
}  // namespace feedline
