// A worker process that cannot be forked is reported as such: an Error
// saying that the worker process could not be started and why (the fork's
// errno), not a WorkerInitError, since no worker_init ran. Through the
// public DataLoader, in a child process of the test whose limit on
// processes (RLIMIT_NPROC) lets the loader's worker thread start and makes
// the fork fail.
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

class Numbers : public Dataset {
 public:
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    out.SetScalar<int64_t>("value", index);
  }
};

// The tasks (processes and threads) that run as real user `uid`: what
// RLIMIT_NPROC counts.
int64_t TasksOf(uid_t uid) {
  int64_t count = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  while (dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream status(std::string("/proc/") + entry->d_name + "/status");
    std::string key;
    uid_t real = 0;
    int64_t threads = 0;
    bool mine = false;
    while (status >> key) {
      if (key == "Uid:") {
        status >> real;
        mine = real == uid;
      } else if (key == "Threads:") {
        status >> threads;
      }
    }
    if (mine) count += threads;
  }
  ::closedir(proc);
  return count;
}

// Runs in the forked child: exit status 0 if the loader reported a failed
// start of its worker process; else 1, with what happened on stderr.
[[noreturn]] void LoadWithoutForks() {
  if (::getuid() == 0) {
    // root is not held to RLIMIT_NPROC: a user of its own, with no other
    // process (if the system has the id; else this process's own).
    if (::setgid(54321) != 0 || ::setuid(54321) != 0) std::perror("setuid");
  }
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 1;
  options.worker_mode = WorkerMode::kProcess;
  DataLoader loader(std::make_shared<Numbers>(), options);
  // One task more than now: the loader's worker thread; its fork is refused.
  const int64_t tasks = TasksOf(::getuid());
  const rlimit limit{static_cast<rlim_t>(tasks + 1), static_cast<rlim_t>(tasks + 1)};
  if (tasks < 1 || ::setrlimit(RLIMIT_NPROC, &limit) != 0) {
    std::fprintf(stderr, "could not limit the processes (%lld tasks)\n",
                 static_cast<long long>(tasks));
    _exit(1);
  }
  try {
    loader.Next();
    std::fprintf(stderr, "a batch came without a worker process\n");
  } catch (const WorkerInitError& e) {
    std::fprintf(stderr, "WorkerInitError: %s\n", e.what());
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find("worker process 0 could not be started: fork failed: ") != std::string::npos) {
      _exit(0);
    }
    std::fprintf(stderr, "Error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "another exception: %s\n", e.what());
  }
  _exit(1);
}

TEST(FailedFork, IsReportedAsAWorkerProcessThatCouldNotStart) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0) << std::strerror(errno);
  if (child == 0) LoadWithoutForks();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the test's child ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's message above";
}

}  // namespace
}  // namespace feedline
