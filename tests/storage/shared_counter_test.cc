// SharedCounter: a count in a mapped file, seen at once by every process
// that names the file, forked children included.
#include "src/storage/shared_counter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "tests/storage/storage_testing.h"

namespace feedline::storage {
namespace {

using testing::TempDir;

TEST(SharedCounter, StartsAtZeroAndCountsAcrossInstancesThreadsAndProcesses) {
  TempDir dir;
  const std::string path = dir / "count";
  const SharedCounter counter(path);
  EXPECT_EQ(counter.value(), 0u);
  counter.Increment();
  const SharedCounter other(path);  // another process would open it so
  EXPECT_EQ(other.value(), 1u);

  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) counter.Increment();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(other.value(), 4001u);

  const pid_t child = ::fork();
  if (child == 0) {
    const SharedCounter own(path);
    for (int i = 0; i < 10; ++i) own.Increment();
    counter.Increment();  // the inherited mapping is shared too
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(counter.value(), 4012u);
  // Opened again, the file keeps its count.
  EXPECT_EQ(SharedCounter(path).value(), 4012u);
}

TEST(SharedCounter, AFileThatCannotBeMadeIsAnErrorNamingIt) {
  TempDir dir;
  const std::string path = dir / "missing/count";
  EXPECT_THAT([&] { SharedCounter counter(path); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr(path)));
}

}  // namespace
}  // namespace feedline::storage
