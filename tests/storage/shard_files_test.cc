// ShardFiles: one descriptor per shard, an LRU bound, reopened after fork,
// and closed once its file is unlinked (given a count of unlinks).
#include "src/storage/shard_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using testing::TempDir;
using testing::WriteBytes;

std::vector<std::string> MakeFiles(const TempDir& dir, int n) {
  std::vector<std::string> paths;
  for (int i = 0; i < n; ++i) {
    paths.push_back(dir / ("f" + std::to_string(i)));
    WriteBytes(paths.back(), std::vector<uint8_t>(16, static_cast<uint8_t>(i)));
  }
  return paths;
}

uint8_t FirstByte(int fd) {
  uint8_t byte = 0xEE;
  EXPECT_EQ(::pread(fd, &byte, 1, 0), 1);
  return byte;
}

TEST(ShardFiles, KeepsOneDescriptorPerShardAcrossReads) {
  TempDir dir;
  ShardFiles files(MakeFiles(dir, 3), 8);
  EXPECT_EQ(files.open_count(), 0u);
  int first_fd;
  {
    ShardFiles::Handle h = files.Acquire(1);
    first_fd = h.fd();
    EXPECT_EQ(FirstByte(h.fd()), 1);
  }
  for (int i = 0; i < 5; ++i) {
    ShardFiles::Handle h = files.Acquire(1);
    EXPECT_EQ(h.fd(), first_fd);  // the same descriptor, not reopened
  }
  EXPECT_EQ(files.open_count(), 1u);
}

TEST(ShardFiles, ManyShardsStayUnderTheBound) {
  TempDir dir;
  const std::vector<std::string> paths = MakeFiles(dir, 40);
  ShardFiles files(paths, 4);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 40; ++i) {
      ShardFiles::Handle h = files.Acquire(static_cast<size_t>((i * 7 + round) % 40));
      EXPECT_EQ(FirstByte(h.fd()), (i * 7 + round) % 40);
      EXPECT_LE(files.open_count(), 4u);
    }
  }
  // The most recently used stay open: reading them again opens nothing.
  { ShardFiles::Handle h = files.Acquire(0); }
  { ShardFiles::Handle h = files.Acquire(1); }
  ShardFiles::Handle again = files.Acquire(0);
  EXPECT_EQ(FirstByte(again.fd()), 0);
  EXPECT_LE(files.open_count(), 4u);
}

TEST(ShardFiles, PinnedDescriptorsAreNeverClosed) {
  TempDir dir;
  ShardFiles files(MakeFiles(dir, 5), 2);
  ShardFiles::Handle a = files.Acquire(0);
  ShardFiles::Handle b = files.Acquire(1);
  ShardFiles::Handle c = files.Acquire(2);  // all pinned: one over the bound
  EXPECT_EQ(files.open_count(), 3u);
  EXPECT_EQ(FirstByte(a.fd()), 0);
  EXPECT_EQ(FirstByte(b.fd()), 1);
  EXPECT_EQ(FirstByte(c.fd()), 2);
  a = ShardFiles::Handle();
  b = ShardFiles::Handle();
  ShardFiles::Handle d = files.Acquire(3);  // closes unpinned ones to make room
  EXPECT_LE(files.open_count(), 2u);
  EXPECT_EQ(FirstByte(c.fd()), 2);
  EXPECT_EQ(FirstByte(d.fd()), 3);
}

// Threads reading many shards through a small bound: a descriptor in use is
// never closed under a reader (each read sees its own file's bytes), and
// the bound is exceeded only by descriptors pinned at the time.
TEST(ShardFiles, ThreadsShareTheBoundWithoutClosingADescriptorInUse) {
  TempDir dir;
  ShardFiles files(MakeFiles(dir, 10), 3);
  constexpr int kThreads = 4;
  std::atomic<int> wrong{0};
  std::atomic<size_t> most_open{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 400; ++i) {
        const int shard = (i * 7 + t * 3) % 10;
        ShardFiles::Handle h = files.Acquire(static_cast<size_t>(shard));
        uint8_t byte = 0xEE;
        if (::pread(h.fd(), &byte, 1, 0) != 1 || byte != shard) ++wrong;
        size_t open = files.open_count();
        size_t seen = most_open.load();
        while (open > seen && !most_open.compare_exchange_weak(seen, open)) {
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(most_open.load(), 3u + kThreads);
  EXPECT_LE(files.open_count(), 3u);
}

TEST(ShardFiles, AMissingFileIsAnErrorNamingIt) {
  TempDir dir;
  std::vector<std::string> paths = MakeFiles(dir, 1);
  paths.push_back(dir / "gone.tar");
  ShardFiles files(paths, 4);
  EXPECT_THAT([&] { files.Acquire(1); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("gone.tar: cannot open shard")));
  EXPECT_EQ(FirstByte(files.Acquire(0).fd()), 0);
}

// A forked child opens its own descriptor (a new open file description, so
// a new file offset and readahead state) instead of using the inherited one.
TEST(ShardFiles, AForkedChildReopens) {
  TempDir dir;
  ShardFiles files(MakeFiles(dir, 2), 4);
  int parent_fd;
  {
    ShardFiles::Handle h = files.Acquire(0);
    parent_fd = h.fd();
    // Marks the parent's open file description: a shared one would show it.
    ASSERT_EQ(::lseek(h.fd(), 7, SEEK_SET), 7);
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // bounded even if something hangs
    int code = 0;
    {
      ShardFiles::Handle h = files.Acquire(0);
      if (::lseek(h.fd(), 0, SEEK_CUR) != 0) code = 1;  // inherited description
      if (FirstByte(h.fd()) != 0) code = 2;
      ShardFiles::Handle other = files.Acquire(1);
      if (FirstByte(other.fd()) != 1) code = 3;
      if (files.open_count() != 2) code = 4;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's descriptor is untouched by the child's reset.
  ShardFiles::Handle h = files.Acquire(0);
  EXPECT_EQ(h.fd(), parent_fd);
  EXPECT_EQ(::lseek(h.fd(), 0, SEEK_CUR), 7);
  EXPECT_EQ(files.open_count(), 1u);
}

// A count of unlinks as the cache keeps it: bumped after a file is unlinked.
TEST(ShardFiles, ADescriptorOfAnUnlinkedFileIsClosedOnceUnpinnedAndTheShardReopened) {
  TempDir dir;
  const std::vector<std::string> paths = MakeFiles(dir, 3);
  std::atomic<uint64_t> unlinks{0};
  ShardFiles files(paths, 8, [&] { return unlinks.load(); });
  { ShardFiles::Handle h = files.Acquire(0); }
  ShardFiles::Handle pinned = files.Acquire(1);
  EXPECT_EQ(files.open_count(), 2u);

  // Both files replaced (the cache evicted them and downloaded them anew).
  for (int i : {0, 1}) {
    std::filesystem::remove(paths[i]);
    WriteBytes(paths[i], std::vector<uint8_t>(16, static_cast<uint8_t>(10 + i)));
  }
  ++unlinks;
  // The unpinned one is closed at the next call; the pinned one stays
  // readable for its holder, and the next Acquire of its shard opens the
  // new file.
  {
    ShardFiles::Handle h = files.Acquire(0);
    EXPECT_EQ(FirstByte(h.fd()), 10);
  }
  EXPECT_EQ(FirstByte(pinned.fd()), 1);
  {
    ShardFiles::Handle fresh = files.Acquire(1);
    EXPECT_NE(fresh.fd(), pinned.fd());
    EXPECT_EQ(FirstByte(fresh.fd()), 11);
    EXPECT_EQ(files.open_count(), 3u);  // the old one is still pinned
  }
  const int old_fd = pinned.fd();
  pinned = ShardFiles::Handle();
  EXPECT_EQ(files.open_count(), 2u);
  EXPECT_EQ(::fcntl(old_fd, F_GETFD), -1);  // closed
}

TEST(ShardFiles, WithoutACountNothingIsChecked) {
  TempDir dir;
  const std::vector<std::string> paths = MakeFiles(dir, 1);
  ShardFiles files(paths, 8);
  int fd;
  { fd = files.Acquire(0).fd(); }
  std::filesystem::remove(paths[0]);
  ShardFiles::Handle h = files.Acquire(0);
  EXPECT_EQ(h.fd(), fd);
  EXPECT_EQ(FirstByte(h.fd()), 0);
}

// The per-record cost, counted rather than timed (a timing bound fails on a
// loaded machine): while nothing is unlinked, a read looks at the count
// twice (its Acquire and its release) and keeps its descriptor, so no file
// is looked at again.
TEST(ShardFiles, AnUnchangedCountIsOneLoadPerReadAndKeepsTheDescriptors) {
  TempDir dir;
  const std::vector<std::string> paths = MakeFiles(dir, 4);
  int looks = 0;
  ShardFiles files(paths, 0, [&] {
    ++looks;
    return uint64_t{7};
  });
  const int at_start = looks;
  std::vector<int> fds;
  for (size_t i = 0; i < 4; ++i) fds.push_back(files.Acquire(i).fd());
  for (int round = 0; round < 100; ++round) {
    for (size_t i = 0; i < 4; ++i) ASSERT_EQ(files.Acquire(i).fd(), fds[i]);
  }
  EXPECT_EQ(looks - at_start, 2 * 404);  // the Acquire and the release, nothing else
}

}  // namespace
}  // namespace feedline::storage
