// BuildDataLoader's decisions (src/loader_factory/build_data_loader.h):
// threads or processes for each worker_mode, num_workers and kind of
// dataset (map-style or a stream), decided once and told in the options the loader reports; the
// user's worker_init runs where the samples load; a process loader is tuned
// as one. Through the public DataLoader where a C++ user can say it, and
// through LoaderSpec for what only a front end says (a dataset that holds a
// global lock, as a Python one does).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/feedline.h"
#include "src/loader_factory/build_data_loader.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

// Each sample says which process loaded it, and which pid ran worker_init
// in that process (0: none there).
std::atomic<int64_t> init_pid{0};

class WhereLoaded : public Dataset {
 public:
  int64_t size() const override { return 24; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    out.SetScalar<int64_t>("index", index);
    out.SetScalar<int64_t>("pid", ::getpid());
    out.SetScalar<int64_t>("init_pid", init_pid.load());
  }
};

class Counting : public IterableDataset {
 public:
  class Stream : public SampleStream {
   public:
    bool Next(Sample& out, SampleContext&) override {
      if (next_ >= 4) return false;
      out.SetScalar<int64_t>("index", next_++);
      out.SetScalar<int64_t>("pid", ::getpid());
      out.SetScalar<int64_t>("init_pid", init_pid.load());
      return true;
    }

   private:
    int64_t next_ = 0;
  };
  std::unique_ptr<SampleStream> Open(int, int, int64_t) const override {
    return std::make_unique<Stream>();
  }
};

struct Loaded {
  std::set<int64_t> pids;       // where the samples loaded
  std::set<int64_t> init_pids;  // where worker_init ran, as each sample saw it
  int64_t samples = 0;
};

Loaded LoadAll(DataLoader& loader) {
  Loaded loaded;
  for (const Batch& batch : loader) {
    const Tensor& pid = batch["pid"];
    const Tensor& init = batch["init_pid"];
    for (int64_t r = 0; r < pid.shape()[0]; ++r) {
      loaded.pids.insert(pid.data<int64_t>()[r]);
      loaded.init_pids.insert(init.data<int64_t>()[r]);
      ++loaded.samples;
    }
  }
  return loaded;
}

LoaderOptions Options(WorkerMode mode, int num_workers) {
  LoaderOptions options;
  options.batch_size = 4;
  options.worker_mode = mode;
  options.num_workers = num_workers;
  options.worker_init = [](int) { init_pid.store(::getpid()); };
  return options;
}

// Loads WhereLoaded with `options`; true if it loaded in other processes.
bool LoadsInOtherProcesses(const LoaderOptions& options, WorkerMode* decided) {
  init_pid.store(0);
  DataLoader loader(std::make_shared<WhereLoaded>(), options);
  *decided = loader.options().worker_mode;
  const Loaded loaded = LoadAll(loader);
  EXPECT_EQ(loaded.samples, 24);
  EXPECT_EQ(loaded.pids.size() > 0, true);
  const bool elsewhere = loaded.pids.count(::getpid()) == 0;
  if (elsewhere) {
    // worker_init ran in the processes, each before its samples, and never here.
    EXPECT_EQ(loaded.init_pids, loaded.pids);
    EXPECT_EQ(init_pid.load(), 0);
  } else if (options.num_workers != 0) {
    // On the worker threads, of this process.
    EXPECT_EQ(loaded.init_pids, std::set<int64_t>{::getpid()});
  }
  return elsewhere;
}

TEST(BuildDataLoader, ThreadModeLoadsOnThreads) {
  WorkerMode decided;
  EXPECT_FALSE(LoadsInOtherProcesses(Options(WorkerMode::kThread, 2), &decided));
  EXPECT_EQ(decided, WorkerMode::kThread);
}

TEST(BuildDataLoader, ProcessModeLoadsInWorkerProcesses) {
  WorkerMode decided;
  EXPECT_TRUE(LoadsInOtherProcesses(Options(WorkerMode::kProcess, 2), &decided));
  EXPECT_EQ(decided, WorkerMode::kProcess);
}

TEST(BuildDataLoader, ProcessModeWithAutoWorkersLoadsInWorkerProcesses) {
  WorkerMode decided;
  EXPECT_TRUE(LoadsInOtherProcesses(Options(WorkerMode::kProcess, kAuto), &decided));
  EXPECT_EQ(decided, WorkerMode::kProcess);
}

TEST(BuildDataLoader, AutoModePutsACppDatasetOnThreads) {
  // A C++ Dataset holds no global lock: processes would only add a round trip.
  WorkerMode decided;
  EXPECT_FALSE(LoadsInOtherProcesses(Options(WorkerMode::kAuto, 2), &decided));
  EXPECT_EQ(decided, WorkerMode::kThread);
  EXPECT_FALSE(LoadsInOtherProcesses(Options(WorkerMode::kAuto, kAuto), &decided));
  EXPECT_EQ(decided, WorkerMode::kThread);
}

TEST(BuildDataLoader, NoWorkersLoadInTheCallersThreadWhateverTheMode) {
  for (WorkerMode mode : {WorkerMode::kThread, WorkerMode::kProcess, WorkerMode::kAuto}) {
    WorkerMode decided;
    EXPECT_FALSE(LoadsInOtherProcesses(Options(mode, 0), &decided)) << WorkerModeName(mode);
    EXPECT_EQ(decided, WorkerMode::kThread) << WorkerModeName(mode);
  }
}

TEST(BuildDataLoader, ACppStreamLoadsOnThreadsUnlessProcessesAreAsked) {
  for (WorkerMode mode : {WorkerMode::kThread, WorkerMode::kAuto, WorkerMode::kProcess}) {
    init_pid.store(0);
    DataLoader loader(std::make_shared<Counting>(), Options(mode, 2));
    const bool processes = mode == WorkerMode::kProcess;
    EXPECT_EQ(loader.options().worker_mode, processes ? WorkerMode::kProcess : WorkerMode::kThread);
    const Loaded loaded = LoadAll(loader);
    EXPECT_EQ(loaded.samples, 8) << WorkerModeName(mode);  // each worker's own stream of 4
    EXPECT_EQ(loaded.pids.count(::getpid()) == 0, processes) << WorkerModeName(mode);
    if (processes) {
      // Two processes, each running its own pass and its worker_init.
      EXPECT_EQ(loaded.pids.size(), 2u);
      EXPECT_EQ(loaded.init_pids, loaded.pids);
      EXPECT_EQ(init_pid.load(), 0);
    }
  }
}

// A dataset that holds a global lock while it loads (a Python one) goes to
// processes under kAuto; it is built with a LoaderSpec, as the binding
// builds a Python loader.
internal::BuiltLoader BuildHoldingALock(WorkerMode mode, int num_workers) {
  internal::LoaderSpec spec;
  spec.dataset = std::make_shared<WhereLoaded>();
  spec.options = Options(mode, num_workers);
  spec.holds_global_lock = true;
  return internal::BuildDataLoader(std::move(spec));
}

TEST(BuildDataLoader, AutoModePutsADatasetHoldingAGlobalLockInProcesses) {
  init_pid.store(0);
  internal::BuiltLoader built = BuildHoldingALock(WorkerMode::kAuto, 2);
  ASSERT_NE(built.processes, nullptr);
  EXPECT_EQ(built.loader->options().worker_mode, WorkerMode::kProcess);
  const Loaded loaded = LoadAll(*built.loader);
  EXPECT_EQ(loaded.samples, 24);
  EXPECT_EQ(loaded.pids.count(::getpid()), 0u);
  // The samples loaded in the processes the loader reports (a worker may
  // have loaded none: another claimed every row first).
  std::set<int64_t> pids;
  for (int64_t pid : built.processes->worker_pids()) {
    if (pid > 0) pids.insert(pid);
  }
  EXPECT_TRUE(std::includes(pids.begin(), pids.end(), loaded.pids.begin(), loaded.pids.end()))
      << loaded.pids.size() << " loading processes, " << pids.size() << " reported";
}

TEST(BuildDataLoader, ThreadModeKeepsADatasetHoldingAGlobalLockOnThreads) {
  internal::BuiltLoader built = BuildHoldingALock(WorkerMode::kThread, 2);
  EXPECT_EQ(built.processes, nullptr);
  EXPECT_EQ(built.loader->options().worker_mode, WorkerMode::kThread);
  EXPECT_EQ(LoadAll(*built.loader).pids, std::set<int64_t>{::getpid()});
}

// The backend's traits reach the tuner: a loader whose workers are
// processes waits for longer, steadier evidence (costly_workers), whoever
// asked for the processes: worker_mode kProcess, or kAuto for a dataset
// that holds a global lock (every Python loader in processes).
TEST(BuildDataLoader, ProcessLoadersAreTunedAsProcesses) {
  internal::BuiltLoader built = BuildHoldingALock(WorkerMode::kAuto, kAuto);
  EXPECT_EQ(LoadAll(*built.loader).samples, 24);
  const TunerStats tuner = built.loader->stats().tuner;
  EXPECT_TRUE(tuner.enabled);
  EXPECT_TRUE(tuner.costly_workers);

  DataLoader threads(std::make_shared<WhereLoaded>(), Options(WorkerMode::kAuto, kAuto));
  EXPECT_EQ(LoadAll(threads).samples, 24);
  EXPECT_FALSE(threads.stats().tuner.costly_workers);
}

TEST(BuildDataLoader, RefusesASpecWithoutADatasetOrWithTwo) {
  internal::LoaderSpec none;
  EXPECT_THROW(internal::BuildDataLoader(none), Error);
  internal::LoaderSpec both;
  both.dataset = std::make_shared<WhereLoaded>();
  both.stream = std::make_shared<Counting>();
  try {
    internal::BuildDataLoader(both);
    FAIL() << "a spec with a dataset and a stream was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not both"));
  }
}

TEST(LoadsInWorkerProcesses, DecidesFromModeLockAndWorkers) {
  using internal::LoadsInWorkerProcesses;
  for (bool lock : {false, true}) {
    EXPECT_FALSE(LoadsInWorkerProcesses(WorkerMode::kThread, lock, 4));
    EXPECT_TRUE(LoadsInWorkerProcesses(WorkerMode::kProcess, lock, 4));
    EXPECT_TRUE(LoadsInWorkerProcesses(WorkerMode::kProcess, lock, kAuto));
    for (WorkerMode mode : {WorkerMode::kThread, WorkerMode::kProcess, WorkerMode::kAuto}) {
      EXPECT_FALSE(LoadsInWorkerProcesses(mode, lock, 0));
    }
  }
  EXPECT_FALSE(LoadsInWorkerProcesses(WorkerMode::kAuto, false, 4));
  EXPECT_TRUE(LoadsInWorkerProcesses(WorkerMode::kAuto, true, 4));
  EXPECT_TRUE(LoadsInWorkerProcesses(WorkerMode::kAuto, true, kAuto));
}

}  // namespace
}  // namespace feedline
