// Worker processes for C++ datasets (LoaderOptions::worker_mode = kProcess),
// through the public DataLoader: the batches of thread mode, a crash in Get
// isolated to one worker (restarted, the sample failing after a few deaths),
// a worker killed from outside with every sample still delivered once, and
// no process left behind. Every test is bounded: a loader either ends or the
// CTest timeout ends it.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/feedline.h"
#include "process/child_processes.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

using testing::ChildProcesses;
using testing::KillOneLiveChild;

enum class Crash { kNone, kAbort, kSegfault };

// Sample i: "index" = i (fixed, written into the batch row), "noise" = 3
// draws from the sample's Rng, and "ramp" = i % 5 + 1 values (variable
// length, padded at collate). `crash_at` crashes the process that loads it;
// `delay` slows every sample so a test can act mid-epoch.
class CrashingDataset : public Dataset {
 public:
  CrashingDataset(int64_t n, int64_t crash_at = -1, Crash crash = Crash::kNone,
                  std::chrono::microseconds delay = {})
      : n_(n), crash_at_(crash_at), crash_(crash), delay_(delay) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    CheckIndex(index, n_);
    if (index == crash_at_) {
      if (crash_ == Crash::kAbort) std::abort();
      if (crash_ == Crash::kSegfault) ::raise(SIGSEGV);
    }
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    out.SetScalar<int64_t>("index", index);
    Tensor noise = out.Allocate("noise", DType::kF32, Shape{3});
    for (int k = 0; k < 3; ++k) noise.data<float>()[k] = static_cast<float>(ctx.rng().Uniform());
    Tensor ramp = out.Allocate("ramp", DType::kI32, Shape{index % 5 + 1});
    for (int64_t k = 0; k <= index % 5; ++k) ramp.data<int32_t>()[k] = static_cast<int32_t>(k);
  }
  std::string Source(int64_t index) const override {
    return "shard-" + std::to_string(index) + ".bin";
  }
  std::vector<FieldSpec> FixedFields() const override {
    return {{"index", DType::kI64, Shape{}}};
  }

 private:
  int64_t n_;
  int64_t crash_at_;
  Crash crash_;
  std::chrono::microseconds delay_;
};

// Every batch's fields, byte for byte.
struct CopiedBatch {
  std::vector<std::string> names;
  std::vector<std::vector<char>> bytes;
  bool operator==(const CopiedBatch&) const = default;
};

CopiedBatch Copy(const Batch& batch) {
  CopiedBatch out;
  for (int i = 0; i < batch.num_fields(); ++i) {
    const Tensor& t = batch.field(i);
    out.names.push_back(batch.field_name(i));
    const char* p = static_cast<const char*>(t.raw());
    out.bytes.emplace_back(p, p + t.bytes());
  }
  return out;
}

std::vector<int64_t> Indices(const Batch& batch) {
  const Tensor& t = batch["index"];
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + batch.size());
}

// Shuffled with a seed: each epoch's order differs, and is the same in both modes.
LoaderOptions WorkersOptions(WorkerMode mode, int workers = 2) {
  LoaderOptions options;
  options.worker_mode = mode;
  options.num_workers = workers;
  options.batch_size = 8;
  options.shuffle = true;
  options.seed = 7;
  return options;
}

class ProcessWorkers : public ::testing::Test {
 protected:
  // Crashing children must not write core files.
  void SetUp() override {
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);
  }
  void TearDown() override { EXPECT_TRUE(ChildProcesses().empty()); }
};

TEST_F(ProcessWorkers, BatchesAreThoseOfThreadMode) {
  auto dataset = std::make_shared<CrashingDataset>(203);
  std::vector<CopiedBatch> threads, processes;
  {
    DataLoader loader(dataset, WorkersOptions(WorkerMode::kThread, 3));
    for (const Batch& b : loader) threads.push_back(Copy(b));
  }
  {
    DataLoader loader(dataset, WorkersOptions(WorkerMode::kProcess, 3));
    for (int epoch = 0; epoch < 2; ++epoch) {  // fresh processes each epoch
      processes.clear();
      for (const Batch& b : loader) processes.push_back(Copy(b));
    }
  }
  ASSERT_EQ(threads.size(), 26u);
  EXPECT_EQ(threads.size(), processes.size());
  // Epoch 1 of processes against epoch 0 of threads would differ (shuffle):
  // compare same epochs.
  std::vector<CopiedBatch> second_epoch_threads;
  {
    DataLoader loader(dataset, WorkersOptions(WorkerMode::kThread, 3));
    for (int epoch = 0; epoch < 2; ++epoch) {
      second_epoch_threads.clear();
      for (const Batch& b : loader) second_epoch_threads.push_back(Copy(b));
    }
  }
  EXPECT_TRUE(processes == second_epoch_threads);
  EXPECT_FALSE(threads == second_epoch_threads);  // the check above can fail
}

TEST_F(ProcessWorkers, AutoAndThreadLoadOnThreads) {
  EXPECT_EQ(ParseWorkerMode("auto"), WorkerMode::kAuto);
  EXPECT_STREQ(WorkerModeName(WorkerMode::kProcess), "process");
  EXPECT_THROW(ParseWorkerMode("processes"), Error);
  for (WorkerMode mode : {WorkerMode::kAuto, WorkerMode::kThread}) {
    DataLoader loader(std::make_shared<CrashingDataset>(16), WorkersOptions(mode));
    for (const Batch& b : loader) {
      (void)b;
      EXPECT_TRUE(ChildProcesses().empty());
    }
  }
}

class CrashInGet : public ProcessWorkers, public ::testing::WithParamInterface<Crash> {};

TEST_P(CrashInGet, SampleFailsAfterThreeDeathsAndTheRunCompletesUnderSkip) {
  const int64_t n = 60, bad = 17;
  LoaderOptions options = WorkersOptions(WorkerMode::kProcess);
  options.error_policy = ErrorPolicy::kSkip;
  DataLoader loader(std::make_shared<CrashingDataset>(n, bad, GetParam()), options);
  std::multiset<int64_t> seen;
  for (const Batch& b : loader) {
    for (int64_t i : Indices(b)) seen.insert(i);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n - 1));
  EXPECT_EQ(seen.count(bad), 0u);
  for (int64_t i = 0; i < n; ++i) {
    if (i != bad) {
      EXPECT_EQ(seen.count(i), 1u) << i;
    }
  }
  const StatsSnapshot stats = loader.stats();
  EXPECT_EQ(stats.skipped, 1);
}

TEST_P(CrashInGet, UnderRaiseTheErrorNamesIndexSourceSignalAndOom) {
  const int64_t bad = 5;
  LoaderOptions options = WorkersOptions(WorkerMode::kProcess);
  options.shuffle = false;
  DataLoader loader(std::make_shared<CrashingDataset>(24, bad, GetParam()), options);
  try {
    for (const Batch& b : loader) (void)b;
    FAIL() << "the crashing sample did not fail";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "worker died");
    EXPECT_EQ(e.index(), bad);
    EXPECT_EQ(e.source(), "shard-5.bin");
    EXPECT_THAT(e.message(), HasSubstr("died 3 times"));
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer turns a SIGSEGV into a report, then exit status 1 or
    // (abort_on_error) SIGABRT.
    EXPECT_THAT(e.message(), ::testing::AnyOf(HasSubstr("killed by signal " +
                                                        std::to_string(SIGABRT)),
                                              HasSubstr("exited with status 1")));
#else
    const int sig = GetParam() == Crash::kAbort ? SIGABRT : SIGSEGV;
    EXPECT_THAT(e.message(), HasSubstr("killed by signal " + std::to_string(sig)));
#endif
    EXPECT_THAT(e.message(), HasSubstr("OOM"));
  }
}

INSTANTIATE_TEST_SUITE_P(AbortAndSegfault, CrashInGet,
                         ::testing::Values(Crash::kAbort, Crash::kSegfault));

TEST_F(ProcessWorkers, WorkerKilledMidEpochEverySampleOnceAndSameBatches) {
  const int64_t n = 240;
  auto dataset = std::make_shared<CrashingDataset>(n, -1, Crash::kNone,
                                                   std::chrono::microseconds(500));
  std::vector<CopiedBatch> reference, batches;
  {
    DataLoader loader(dataset, WorkersOptions(WorkerMode::kThread));
    for (const Batch& b : loader) reference.push_back(Copy(b));
  }
  DataLoader loader(dataset, WorkersOptions(WorkerMode::kProcess));
  std::multiset<int64_t> seen;
  std::set<pid_t> killed;
  int i = 0;
  for (const Batch& b : loader) {
    batches.push_back(Copy(b));
    for (int64_t index : Indices(b)) seen.insert(index);
    if (i == 3 || i == 12) {
      ASSERT_TRUE(KillOneLiveChild(&killed));
    }
    ++i;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) EXPECT_EQ(seen.count(k), 1u) << k;
  EXPECT_TRUE(batches == reference);
  for (pid_t p : killed) EXPECT_EQ(ChildProcesses().count(p), 0u);
}

TEST_F(ProcessWorkers, NoProcessIsLeftAfterTheLoaderIsDestroyedMidEpoch) {
  {
    LoaderOptions options = WorkersOptions(WorkerMode::kProcess);
    options.persistent_workers = true;
    DataLoader loader(std::make_shared<CrashingDataset>(400, -1, Crash::kNone,
                                                        std::chrono::microseconds(2000)),
                      options);
    std::optional<Batch> batch = loader.Next();
    ASSERT_TRUE(batch);
    EXPECT_EQ(ChildProcesses().size(), 2u);
  }
  EXPECT_TRUE(ChildProcesses().empty());
}

TEST_F(ProcessWorkers, WorkerInitRunsInTheWorkerProcess) {
  static pid_t init_pid = 0;  // the child's copy is set; the parent's stays 0
  class InitPid : public Dataset {
   public:
    int64_t size() const override { return 8; }
    void Get(int64_t, Sample& out, SampleContext&) const override {
      out.SetScalar<int64_t>("init_pid", init_pid);
      out.SetScalar<int64_t>("pid", ::getpid());
    }
  };
  LoaderOptions options = WorkersOptions(WorkerMode::kProcess);
  options.worker_init = [](int) { init_pid = ::getpid(); };
  DataLoader loader(std::make_shared<InitPid>(), options);
  for (const Batch& b : loader) {
    for (int64_t r = 0; r < b.size(); ++r) {
      const int64_t pid = b["pid"].data<int64_t>()[r];
      EXPECT_NE(pid, ::getpid());
      EXPECT_EQ(b["init_pid"].data<int64_t>()[r], pid);
    }
  }
  EXPECT_EQ(init_pid, 0);

  options.worker_init = [](int worker) {
    throw Error("no GPU for worker " + std::to_string(worker));
  };
  DataLoader failing(std::make_shared<InitPid>(), options);
  try {
    for (const Batch& b : failing) (void)b;
    FAIL() << "a failed worker_init went unnoticed";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("worker_init failed: no GPU for worker"));
  }
}

}  // namespace
}  // namespace feedline
