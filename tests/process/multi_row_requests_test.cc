// Several rows per request to a worker process (MultiRowDataset): cheap rows
// are claimed several at a time and go to the process in one message. A
// process that dies in the middle of such a request has every row of it
// loaded again (each sample delivered once, batches those of thread mode),
// and a row that crashes its process inside one fails alone, named by its
// index. The dataset logs which process loaded which index, so the tests
// see that the rows before the deadly one were in the same request: the
// dead process had loaded them, and another process loaded them again.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

// Batches of 4: a claim of cheap rows holds up to 8, so a batch's rows go
// to one process in one request.
constexpr int64_t kBatch = 4;
constexpr int64_t kDeadlyPosition = 3;  // in its batch: rows 0-2 come before it

// Sample i: "index" = i and 3 draws of the sample's Rng. Each load appends
// "pid index" to `dir`/log. The deadly row is the first row at position
// kDeadlyPosition of a batch (at or after `from`) that a process loads right
// after the row before it; `once`: only the first such load dies (SIGKILL,
// as the OOM killer would), else that index kills every process that loads
// it (abort). `dir` is empty in thread mode: no log, no deaths.
class LoggedDataset : public Dataset {
 public:
  LoggedDataset(int64_t n, std::string dir, bool once, int64_t from)
      : n_(n), dir_(std::move(dir)), once_(once), from_(from) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    CheckIndex(index, n_);
    static int64_t previous = -1;  // per process: its last sample
    if (!dir_.empty()) {
      const bool after_previous_row = previous == index - 1;
      previous = index;
      if (Deadly(index, after_previous_row)) {
        Log("died " + std::to_string(index));
        if (once_) ::raise(SIGKILL);
        std::abort();
      }
      Log(std::to_string(index));
    }
    out.SetScalar<int64_t>("index", index);
    Tensor noise = out.Allocate("noise", DType::kF32, Shape{3});
    for (int k = 0; k < 3; ++k) noise.data<float>()[k] = static_cast<float>(ctx.rng().Uniform());
  }
  std::vector<FieldSpec> FixedFields() const override {
    return {{"index", DType::kI64, Shape{}}, {"noise", DType::kF32, Shape{3}}};
  }

 private:
  bool Deadly(int64_t index, bool after_previous_row) const {
    const std::string marker = dir_ + "/deadly";
    if (!once_) {
      // The deadly index is chosen by the first process to meet the
      // condition; later loads of that index die too.
      std::ifstream chosen(marker);
      int64_t deadly;
      if (chosen >> deadly) return deadly == index;
    }
    if (index < from_ || index % kBatch != kDeadlyPosition || !after_previous_row) return false;
    const int fd = ::open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0) return false;  // another row was chosen first
    const std::string text = std::to_string(index) + "\n";
    (void)!::write(fd, text.data(), text.size());
    ::close(fd);
    return true;
  }
  void Log(const std::string& what) const {
    const std::string line = std::to_string(::getpid()) + " " + what + "\n";
    const int fd = ::open((dir_ + "/log").c_str(), O_CREAT | O_APPEND | O_WRONLY, 0600);
    if (fd < 0) return;
    (void)!::write(fd, line.data(), line.size());  // O_APPEND: one line at a time
    ::close(fd);
  }

  int64_t n_;
  std::string dir_;
  bool once_;
  int64_t from_;
};

struct LogLine {
  long pid;
  bool died;
  int64_t index;
};

std::vector<LogLine> ReadLog(const std::string& dir) {
  std::vector<LogLine> lines;
  std::ifstream in(dir + "/log");
  std::string first;
  long pid;
  while (in >> pid >> first) {
    LogLine line{pid, first == "died", 0};
    if (line.died) {
      in >> line.index;
    } else {
      line.index = std::stoll(first);
    }
    lines.push_back(line);
  }
  return lines;
}

// Whether the row before the deadly one was loaded by the process that died
// on it, and then again by another process: it was in the request that died.
// (Claims are sized from measured times: on a busy machine the row before
// may end the claim before, so a test tries a few epochs until it sees one.)
bool RowBeforeWasLoadedAgain(const std::vector<LogLine>& log) {
  long dead_pid = -1;
  int64_t deadly = -1;
  size_t died_at = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].died) {
      dead_pid = log[i].pid;
      deadly = log[i].index;
      died_at = i;
      break;
    }
  }
  EXPECT_GE(deadly, 0) << "no process died";
  bool before_by_dead = false, again_by_other = false;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].died || log[i].index != deadly - 1) continue;
    if (i < died_at && log[i].pid == dead_pid) before_by_dead = true;
    if (i > died_at && log[i].pid != dead_pid) again_by_other = true;
  }
  EXPECT_TRUE(before_by_dead) << "index " << deadly - 1;
  return deadly >= 0 && before_by_dead && again_by_other;
}

constexpr int kTries = 5;

LoaderOptions Options(WorkerMode mode) {
  LoaderOptions options;
  options.worker_mode = mode;
  options.num_workers = 2;
  options.batch_size = kBatch;
  options.seed = 11;
  return options;
}

struct Rows {
  std::vector<int64_t> indices;
  std::vector<float> noise;
  bool operator==(const Rows&) const = default;
};

Rows Read(const Batch& batch) {
  Rows rows;
  const int64_t* index = batch["index"].data<int64_t>();
  const float* noise = batch["noise"].data<float>();
  rows.indices.assign(index, index + batch.size());
  rows.noise.assign(noise, noise + batch.size() * 3);
  return rows;
}

class MultiRowRequests : public ::testing::Test {
 protected:
  void SetUp() override {
    rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);  // crashing children write no core files
    char pattern[] = "/tmp/feedline-multi-row-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void EmptyDir() {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directory(dir_);
  }
  std::string dir_;
};

TEST_F(MultiRowRequests, AWorkerKilledMidRequestGivesEverySampleOnceAndTheSameBatches) {
  const int64_t n = 400;
  std::vector<Rows> reference, batches;
  {
    DataLoader loader(std::make_shared<LoggedDataset>(n, "", true, 0), Options(WorkerMode::kThread));
    for (const Batch& b : loader) reference.push_back(Read(b));
  }
  bool mid_request = false;
  for (int attempt = 0; attempt < kTries && !mid_request; ++attempt) {
    EmptyDir();
    // From batch 10 on: the claims are sized by then.
    DataLoader loader(std::make_shared<LoggedDataset>(n, dir_, true, 10 * kBatch),
                      Options(WorkerMode::kProcess));
    std::multiset<int64_t> seen;
    batches.clear();
    for (const Batch& b : loader) {
      batches.push_back(Read(b));
      for (int64_t i : batches.back().indices) seen.insert(i);
    }
    EXPECT_EQ(loader.stats().worker_restarts, 1);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
    EXPECT_TRUE(batches == reference);
    mid_request = RowBeforeWasLoadedAgain(ReadLog(dir_));
  }
  EXPECT_TRUE(mid_request) << "in " << kTries
                           << " epochs the process never died with the row before in its request";
}

TEST_F(MultiRowRequests, ARowThatCrashesItsWorkerInsideARequestFailsAlone) {
  const int64_t n = 240;
  LoaderOptions options = Options(WorkerMode::kProcess);
  options.error_policy = ErrorPolicy::kSkip;
  bool mid_request = false;
  for (int attempt = 0; attempt < kTries && !mid_request; ++attempt) {
    EmptyDir();
    DataLoader loader(std::make_shared<LoggedDataset>(n, dir_, false, 10 * kBatch), options);
    std::multiset<int64_t> seen;
    for (const Batch& b : loader) {
      for (int64_t i : Read(b).indices) seen.insert(i);
    }
    const std::vector<LogLine> log = ReadLog(dir_);
    mid_request = RowBeforeWasLoadedAgain(log);
    int64_t deadly = -1;
    int deaths = 0;
    for (const LogLine& line : log) {
      if (line.died) {
        deadly = line.index;
        ++deaths;
      }
    }
    ASSERT_GE(deadly, 0);
    // Once in its request, then 3 times alone: the rows of a request that
    // died are not sent together again.
    EXPECT_LE(deaths, 4);
    EXPECT_EQ(loader.stats().skipped, 1);
    EXPECT_EQ(seen.count(deadly), 0u);
    for (int64_t i = 0; i < n; ++i) {
      if (i != deadly) EXPECT_EQ(seen.count(i), 1u) << i;
    }
  }
  EXPECT_TRUE(mid_request) << "in " << kTries
                           << " epochs the row never crashed its process mid-request";

  // Under raise, the error names the row.
  EmptyDir();
  options.error_policy = ErrorPolicy::kRaise;
  DataLoader raising(std::make_shared<LoggedDataset>(n, dir_, false, 10 * kBatch), options);
  try {
    for (const Batch& b : raising) (void)b;
    FAIL() << "the crashing row did not fail";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "worker died");
    EXPECT_THAT(e.message(), HasSubstr("died 3 times"));
    std::ifstream chosen(dir_ + "/deadly");
    int64_t index = -1;
    chosen >> index;
    EXPECT_EQ(e.index(), index);
  }
}

}  // namespace
}  // namespace feedline
