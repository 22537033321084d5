// Ending worker processes right after a TimeoutError leaves none behind.
// The timeout retires the engine thread stuck in the slow sample and starts
// a replacement, whose worker_init (ProcessWorkers::StartWorker) kills the
// stuck process and forks a fresh one, which may still be in flight when
// the loader ends.
//
// Two levels. Through the public DataLoader: destroyed right after the
// error, no worker process is left (a C++ DataLoader joins its engine
// threads, the forking one included, before the worker processes are shut
// down, so it passes with or without the fix below). One level down, the
// race that fix closed (ProcessWorkers::Start ends a process it forked while
// Shutdown ran): Shutdown called while the takeover forks, as the Python
// binding's close() does while engine threads still run. Several rounds
// each, with the shutdown at spread-out moments, to meet the different
// orders. Bounded: a round takes well under a second; a stuck one hits
// CTest's timeout.
#include <poll.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/feedline.h"
#include "process/child_processes.h"
#include "src/process/native_worker.h"
#include "src/process/process_workers.h"

namespace feedline {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcesses;

// Sample i is i; sample `stuck` sleeps far past the loader's timeout (in its
// worker process, which the takeover kills), after writing a byte to
// `entered_fd` if one is given (the pipe is inherited by the worker).
class StuckDataset : public Dataset {
 public:
  StuckDataset(int64_t n, int64_t stuck, int entered_fd = -1)
      : n_(n), stuck_(stuck), entered_fd_(entered_fd) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    CheckIndex(index, n_);
    if (index == stuck_) {
      const char entered = 1;
      if (entered_fd_ >= 0 && ::write(entered_fd_, &entered, 1) != 1) std::abort();
      std::this_thread::sleep_for(30s);
    }
    out.SetScalar<int64_t>("index", index);
  }

 private:
  int64_t n_;
  int64_t stuck_;
  int entered_fd_;
};

// Waits up to `limit` for a byte on `fd`.
bool ByteArrives(int fd, std::chrono::milliseconds limit) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) return false;
  char byte;
  return ::read(fd, &byte, 1) == 1;
}

// The children now that were not there `before`.
std::set<pid_t> NewChildren(const std::set<pid_t>& before) {
  std::set<pid_t> left;
  for (pid_t p : ChildProcesses()) {
    if (before.count(p) == 0) left.insert(p);
  }
  return left;
}

// Polls until no new child is left (reaped), or `limit` passed: a process
// still there then outlived its loader.
std::set<pid_t> ChildrenLeftAfter(const std::set<pid_t>& before, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::set<pid_t> left = NewChildren(before);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    left = NewChildren(before);
  }
  return left;
}

std::string Pids(const std::set<pid_t>& pids) {
  std::ostringstream out;
  for (pid_t p : pids) out << p << " ";
  return out.str();
}

TEST(CloseAfterTimeout, DestroyingTheLoaderAfterATimeoutErrorLeavesNoWorkerProcess) {
  constexpr int64_t kStuck = 10;
  constexpr int kRounds = 6;
  auto dataset = std::make_shared<StuckDataset>(40, kStuck);
  LoaderOptions options;
  options.worker_mode = WorkerMode::kProcess;
  options.num_workers = 2;
  options.batch_size = 5;
  options.timeout = 300ms;
  const std::set<pid_t> before = ChildProcesses();
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < kRounds; ++round) {
    size_t workers_seen = 0;
    {
      DataLoader loader(dataset, options);
      bool timed_out = false;
      try {
        for (const Batch& b : loader) {
          (void)b;
          workers_seen = std::max(workers_seen, NewChildren(before).size());
        }
      } catch (const TimeoutError& e) {
        timed_out = true;
        EXPECT_EQ(e.index(), kStuck);
      }
      ASSERT_TRUE(timed_out) << "round " << round << ": the stuck sample did not time out";
      // Destroyed right away: the replacement worker may be forking now.
    }
    // The check below can see the workers: one at least was there while the
    // batches came (the second may not have started yet at a batch).
    EXPECT_GE(workers_seen, 1u) << "round " << round;
    const std::set<pid_t> left = ChildrenLeftAfter(before, 3s);
    ASSERT_TRUE(left.empty()) << "round " << round
                              << ": worker processes alive after the loader was destroyed: "
                              << Pids(left);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

// The takeover forks the stuck worker's replacement while another thread
// shuts the workers down: the new process must not outlive Shutdown. Checked
// before the ProcessWorkers are destroyed (their destructor would end any
// process, as the Python loader object, kept after close(), does not).
TEST(CloseAfterTimeout, ShutdownWhileATakeoverForksLeavesNoWorkerProcess) {
  constexpr int64_t kStuck = 3;
  constexpr int kRounds = 48;
  int entered[2];
  ASSERT_EQ(::pipe(entered), 0);
  auto program = std::make_shared<internal::NativeWorkerProgram>(
      std::make_shared<StuckDataset>(8, kStuck, entered[1]), nullptr);
  internal::ProcessWorkerOptions options;
  options.num_workers = 1;
  const std::set<pid_t> before = ChildProcesses();
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < kRounds; ++round) {
    internal::ProcessWorkers workers(program, options);
    workers.StartWorker(0);
    // The engine thread stuck in the slow sample.
    std::thread stuck([&] {
      SampleContext ctx(0, 0, kStuck, 0);
      Sample out;
      try {
        workers.LoadSample(kStuck, ctx, out);
        ADD_FAILURE() << "the stuck sample loaded";
      } catch (const SampleError& e) {
        EXPECT_EQ(e.reason(), "timeout");
      }
    });
    // Once the worker process is in the sample, its thread is busy there.
    if (!ByteArrives(entered[0], 10s)) {
      workers.Shutdown();
      stuck.join();
      FAIL() << "round " << round << ": the worker process never started the stuck sample";
    }
    // Its replacement: kills the stuck process, waits for that thread to
    // leave, then forks a fresh process.
    std::thread takeover([&] {
      try {
        workers.StartWorker(0);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "StartWorker: " << e.what();
      }
    });
    stuck.join();  // the takeover killed the stuck process: it forks about now
    // 0 to 0.5 ms later, eight times over: around the fork, whose window is
    // short (on a 2-core machine most misses came at once or 0.1 ms later).
    std::this_thread::sleep_for(std::chrono::microseconds(round % 6 * 100));
    workers.Shutdown();
    takeover.join();
    EXPECT_THAT(workers.worker_pids(), ::testing::Each(-1)) << "round " << round;
    const std::set<pid_t> left = ChildrenLeftAfter(before, 2s);
    ASSERT_TRUE(left.empty()) << "round " << round
                              << ": a worker process forked during Shutdown outlived it: "
                              << Pids(left);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  ::close(entered[0]);
  ::close(entered[1]);
}

}  // namespace
}  // namespace feedline
