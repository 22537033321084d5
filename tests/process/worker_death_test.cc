// How a worker process ended, as the loader reports it: reaping by a
// deadline, the words for an exit, a signal or a kill, the exit code the
// Python front ends read back, and what the OOM count adds.
#include "src/process/worker_death.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A child that runs `body` and never returns into the test.
template <class Body>
pid_t Spawn(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  return pid;
}

std::chrono::steady_clock::time_point In(std::chrono::milliseconds ms) {
  return std::chrono::steady_clock::now() + ms;
}

TEST(ReapBy, AnExitIsItsStatus) {
  const pid_t pid = Spawn([] { ::_exit(3); });
  ASSERT_GT(pid, 0);
  const ProcessEnd end = ReapBy(pid, In(std::chrono::seconds(30)));
  EXPECT_TRUE(end.known);
  EXPECT_FALSE(end.killed);
  EXPECT_EQ(DescribeEnd(pid, end), "(pid " + std::to_string(pid) + ") exited with status 3");
  EXPECT_EQ(ExitCodeOf(pid), 3);
}

TEST(ReapBy, ASignalIsNamedAndIsMinusTheSignalAsAnExitCode) {
  const pid_t pid = Spawn([] { ::raise(SIGTERM); });
  ASSERT_GT(pid, 0);
  const ProcessEnd end = ReapBy(pid, In(std::chrono::seconds(30)));
  EXPECT_TRUE(end.known);
  EXPECT_THAT(DescribeEnd(pid, end), StartsWith("(pid " + std::to_string(pid) +
                                                ") was killed by signal 15"));
  EXPECT_EQ(ExitCodeOf(pid), -SIGTERM);
}

TEST(ReapBy, AProcessStillRunningAtTheDeadlineIsKilled) {
  const pid_t pid = Spawn([] {
    for (;;) ::pause();
  });
  ASSERT_GT(pid, 0);
  const ProcessEnd end = ReapBy(pid, In(std::chrono::milliseconds(20)));
  EXPECT_TRUE(end.known);
  EXPECT_TRUE(end.killed);
  EXPECT_THAT(DescribeEnd(pid, end), HasSubstr("stopped answering and was killed"));
}

TEST(ExitCodeOf, IsUnknownForAProcessThisOneDidNotReap) {
  EXPECT_EQ(ExitCodeOf(::getpid()), std::nullopt);
}

TEST(WorkerDeath, DescribeSaysWhatTheOomCountShows) {
  WorkerDeath death;
  death.how = "(pid 7) was killed by signal 9 (Killed)";
  death.oom_before = 2;
  death.oom_after = 3;
  death.killed_by_oom = true;
  EXPECT_THAT(death.Describe(), HasSubstr("OOM killer acted meanwhile"));
  EXPECT_THAT(death.Describe(), HasSubstr("oom_kill 2 -> 3"));
  death.killed_by_oom = false;
  death.oom_before = 3;
  EXPECT_THAT(death.Describe(), HasSubstr("not the OOM killer"));
  death.oom_after = -1;
  EXPECT_THAT(death.Describe(), HasSubstr("not readable here"));
  EXPECT_THAT(death.Describe(), StartsWith(death.how));
}

TEST(OomKillCounter, ComparesWithTheCountAtThePreviousCheck) {
  OomKillCounter counter;
  WorkerDeath first;
  counter.Check(&first);
  WorkerDeath second;
  counter.Check(&second);
  // Whatever the cgroup says, the second check starts where the first ended.
  EXPECT_EQ(second.oom_before, first.oom_after);
  EXPECT_EQ(second.killed_by_oom, second.oom_after >= 0 && second.oom_before >= 0 &&
                                      second.oom_after > second.oom_before);
  if (ReadOomKills() < 0) {  // no cgroup count here: never blamed on the OOM killer
    EXPECT_EQ(first.oom_after, -1);
    EXPECT_FALSE(first.killed_by_oom);
  }
}

}  // namespace
}  // namespace feedline::internal
