#include "src/core/inherited_fds.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <functional>

namespace feedline::internal {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Runs `child` in a forked child; its exit status (it must _exit).
int InChild(const std::function<int()>& child) {
  pid_t pid;
  {
    const InheritedFdsForkLock lock;  // as ProcessSpawner forks
    pid = ::fork();
    if (pid == 0) _exit(child());
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(InheritedFdsTest, AChildClosesEveryRegisteredDescriptorButItsOwn) {
  int mine[2];
  int other[2];
  ASSERT_EQ(::pipe(mine), 0);
  ASSERT_EQ(::pipe(other), 0);
  for (int fd : {mine[0], mine[1], other[0], other[1]}) RegisterInheritedFd(fd);
  EXPECT_EQ(InChild([&] {
              CloseInheritedFdsExcept({mine[0], mine[1]});
              const bool kept = IsOpen(mine[0]) && IsOpen(mine[1]);
              const bool closed = !IsOpen(other[0]) && !IsOpen(other[1]);
              return kept && closed ? 0 : 2;
            }),
            0);
  // The parent keeps all of them.
  for (int fd : {mine[0], mine[1], other[0], other[1]}) EXPECT_TRUE(IsOpen(fd));
  for (int fd : {mine[0], mine[1], other[0], other[1]}) {
    UnregisterInheritedFd(fd);
    ::close(fd);
  }
}

TEST(InheritedFdsTest, AnUnregisteredDescriptorIsLeftToTheChild) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  RegisterInheritedFd(fds[0]);
  RegisterInheritedFd(fds[1]);
  UnregisterInheritedFd(fds[1]);
  EXPECT_EQ(InChild([&] {
              CloseInheritedFdsExcept({});
              return !IsOpen(fds[0]) && IsOpen(fds[1]) ? 0 : 2;
            }),
            0);
  UnregisterInheritedFd(fds[0]);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(InheritedFdsTest, TheChildsRegistryIsEmptyOnceClosed) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  RegisterInheritedFd(fds[0]);
  EXPECT_EQ(InChild([&] {
              CloseInheritedFdsExcept({});
              // A descriptor opened later under the same number is the child's own.
              int again[2];
              if (::pipe(again) != 0) return 3;
              CloseInheritedFdsExcept({});
              return IsOpen(again[0]) && IsOpen(again[1]) ? 0 : 2;
            }),
            0);
  UnregisterInheritedFd(fds[0]);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace feedline::internal
