// LocalFile: whole reads and writes at offsets, errors that name the
// file, and a worker process forked while it is open closing its copy.
#include "src/storage/local_file.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/core/inherited_fds.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using testing::ReadBytes;
using testing::TempDir;

TEST(LocalFile, WritesAndReadsAtOffsetsLeavingTheRestAsItWas) {
  TempDir dir;
  const LocalFile file = LocalFile::OpenForWriting(dir / "f");
  file.WriteAt("world", 5, 6);
  file.WriteAt("hello ", 6, 0);
  EXPECT_EQ(file.Size(), 11u);
  char got[5];
  file.ReadAt(got, 5, 6);
  EXPECT_EQ(std::string(got, 5), "world");
  file.Truncate(5);
  file.Sync();
  const std::vector<uint8_t> bytes = ReadBytes(dir / "f");
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "hello");
  // Opened again: kept, unless emptied.
  EXPECT_EQ(LocalFile::OpenForWriting(dir / "f").Size(), 5u);
  EXPECT_EQ(LocalFile::OpenForWriting(dir / "f", /*truncate=*/true).Size(), 0u);
}

TEST(LocalFile, AReadPastTheEndIsAnErrorNamingTheFile) {
  TempDir dir;
  const LocalFile file = LocalFile::OpenForWriting(dir / "short");
  file.WriteAt("abc", 3, 0);
  char got[4];
  EXPECT_THAT([&] { file.ReadAt(got, 4, 0); },
              ThrowsMessage<Error>(HasSubstr(dir / "short" + ": ends early")));
}

TEST(LocalFile, AFileThatCannotBeOpenedIsAnErrorNamingItAndTheReason) {
  TempDir dir;
  EXPECT_THAT([&] { LocalFile::OpenForWriting(dir / "absent/f"); },
              ThrowsMessage<Error>(HasSubstr(dir / "absent/f" + ": cannot open: No such file")));
}

TEST(LocalFile, MovedItClosesOnce) {
  TempDir dir;
  LocalFile first = LocalFile::OpenForWriting(dir / "f");
  const int fd = first.fd();
  const LocalFile second(std::move(first));
  EXPECT_EQ(second.fd(), fd);
  EXPECT_EQ(first.fd(), -1);  // NOLINT(bugprone-use-after-move): the moved-from state
  second.WriteAt("x", 1, 0);
  EXPECT_EQ(second.Size(), 1u);
}

// In a child forked as worker processes are (the registry locked across the
// fork, then CloseInheritedFdsExcept): whether `fd` is still open there.
bool OpenInForkedWorker(int fd) {
  pid_t pid;
  {
    const internal::InheritedFdsForkLock lock;
    pid = ::fork();
    if (pid == 0) {
      internal::CloseInheritedFdsExcept({});
      _exit(::fcntl(fd, F_GETFD) != -1 ? 1 : 0);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}

TEST(LocalFile, AWorkerForkedWhileItIsOpenClosesItsCopy) {
  // Held by a worker, a download's blocks would outlive the parent's unlink.
  TempDir dir;
  const LocalFile file = LocalFile::OpenForWriting(dir / "shard.tar.part");
  EXPECT_FALSE(OpenInForkedWorker(file.fd()));
  file.WriteAt("x", 1, 0);  // the parent's is untouched
}

TEST(LocalFile, ADescriptorNumberReusedAfterItClosedIsLeftAlone) {
  TempDir dir;
  int fd;
  {
    const LocalFile file = LocalFile::OpenForWriting(dir / "gone");
    fd = file.fd();
  }
  // The lowest free number: the one the file had.
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  ASSERT_EQ(pipe_ends[0], fd);
  EXPECT_TRUE(OpenInForkedWorker(fd));
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
}

}  // namespace
}  // namespace feedline::storage
