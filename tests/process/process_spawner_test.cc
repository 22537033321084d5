// ProcessSpawner: forks children from its own thread, running the ForkHooks
// around each fork, and a child closes the registered descriptors of other
// workers.
#include "src/process/process_spawner.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace feedline::internal {
namespace {

// The exit status of child `pid`, or -1 if it did not exit normally.
int ExitStatusOf(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ProcessSpawnerTest, TheChildRunsChildMainAndItsExitStatusReachesTheParent) {
  ProcessSpawner spawner(nullptr);
  const pid_t pid = spawner.Spawn([] { _exit(7); });
  ASSERT_GT(pid, 0);
  EXPECT_NE(pid, ::getpid());
  EXPECT_EQ(ExitStatusOf(pid), 7);
}

TEST(ProcessSpawnerTest, AChildMainThatReturnsExitsWithZeroAndOneThatThrowsWithOne) {
  ProcessSpawner spawner(nullptr);
  EXPECT_EQ(ExitStatusOf(spawner.Spawn([] {})), 0);
  EXPECT_EQ(ExitStatusOf(spawner.Spawn([] { throw std::runtime_error("in the child"); })), 1);
}

TEST(ProcessSpawnerTest, TheChildRunsOnTheSpawnerThreadNotTheCaller) {
  ProcessSpawner spawner(nullptr);
  const std::thread::id caller = std::this_thread::get_id();
  // The child's copy of `caller` is the parent's calling thread's id.
  const pid_t pid = spawner.Spawn([caller] { _exit(std::this_thread::get_id() == caller ? 1 : 0); });
  EXPECT_EQ(ExitStatusOf(pid), 0);
}

// Records the hooks in the parent; in the child AfterForkInChild leaves a
// mark that child_main reports through its exit status.
class RecordingHooks : public ForkHooks {
 public:
  void BeforeFork() override { calls.push_back("before"); }
  void AfterForkInParent() override { calls.push_back("parent"); }
  void AfterForkInChild() override { in_child = true; }
  std::vector<std::string> calls;
  bool in_child = false;
};

TEST(ProcessSpawnerTest, HooksRunAroundEachFork) {
  RecordingHooks hooks;
  ProcessSpawner spawner(&hooks);
  const pid_t pid = spawner.Spawn([&hooks] { _exit(hooks.in_child ? 3 : 4); });
  EXPECT_EQ(ExitStatusOf(pid), 3) << "AfterForkInChild ran before child_main";
  EXPECT_EQ(hooks.calls, (std::vector<std::string>{"before", "parent"}));
  EXPECT_FALSE(hooks.in_child) << "AfterForkInChild runs only in the child";
  ExitStatusOf(spawner.Spawn([] { _exit(0); }));
  EXPECT_EQ(hooks.calls.size(), 4u);
}

TEST(ProcessSpawnerTest, SpawnsFromSeveralThreadsAreServedOneAtATime) {
  ProcessSpawner spawner(nullptr);
  std::mutex mu;
  std::set<pid_t> pids;
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] {
      const pid_t pid = spawner.Spawn([i] { _exit(10 + i); });
      const int status = ExitStatusOf(pid);
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_EQ(status, 10 + i);
      pids.insert(pid);
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(pids.size(), 4u);
}

TEST(ProcessSpawnerTest, AChildDiesWithItsSpawnerThreadWhenItAsksTo) {
  // What the worker processes rely on: a child that sets PR_SET_PDEATHSIG
  // (EnterWorkerChild does) is killed when the spawner thread exits.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = -1;
  {
    ProcessSpawner spawner(nullptr);
    pid = spawner.Spawn([&] {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(ready[0]);
      char c = 1;
      if (::write(ready[1], &c, 1) != 1) _exit(5);
      ::pause();
      _exit(6);
    });
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace feedline::internal
