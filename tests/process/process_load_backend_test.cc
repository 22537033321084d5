// ProcessLoadBackend (src/process/process_load_backend.h): the engine's
// LoadBackend over worker processes running a C++ Dataset. A span of rows
// loads in one request; a row that kills its process inside one fails
// alone (the backend loads the rows again one by one and finds it), the
// others load; a row out of range fails alone; a worker_init that fails in
// the child is a WorkerInitError; the program checks a worker's schema once,
// not per sample, unless it refused it. The test plays the engine's worker 0.
#include "src/process/process_load_backend.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/error.h"
#include "src/process/native_worker.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kDeadly = 3;  // kills every process that loads it

class Deadly : public Dataset {
 public:
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == kDeadly) ::kill(::getpid(), SIGKILL);
    out.SetScalar<int64_t>("index", index);
    out.SetScalar<int64_t>("pid", ::getpid());
  }
};

int64_t Field(const Sample& sample, const char* name) {
  for (int f = 0; f < sample.num_fields(); ++f) {
    if (sample.field_name(f) == name) return sample.field(f).data<int64_t>()[0];
  }
  ADD_FAILURE() << "no field " << name;
  return -1;
}

ProcessLoadBackend MakeBackend(std::function<void(int)> worker_init = {}) {
  auto dataset = std::make_shared<Deadly>();
  ProcessWorkerOptions options;
  options.num_workers = 1;
  auto program = std::make_shared<NativeWorkerProgram>(dataset, std::move(worker_init));
  return ProcessLoadBackend(std::make_shared<ProcessWorkers>(program, options), dataset->size());
}

// `samples` holds one sample per index.
std::vector<RowLoad> Rows(const std::vector<int64_t>& indices, std::vector<Sample>* samples) {
  std::vector<RowLoad> rows;
  for (size_t i = 0; i < indices.size(); ++i) rows.push_back({indices[i], &(*samples)[i], nullptr});
  return rows;
}

FailureKind KindOf(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const SampleError& e) {
    return e.kind();
  } catch (...) {
  }
  return FailureKind::kException;
}

TEST(ProcessLoadBackend, TraitsAreThoseOfProcesses) {
  ProcessLoadBackend backend = MakeBackend();
  const LoadBackendTraits traits = backend.traits();
  EXPECT_TRUE(traits.round_trip_rows);
  EXPECT_TRUE(traits.costly_workers);
  EXPECT_TRUE(traits.starts_workers);
  EXPECT_TRUE(traits.shared_slots);
  // A stream's workers: items come one by one, into slots on the heap.
  ProcessLoadBackend stream(backend.workers(), /*dataset_size=*/-1);
  EXPECT_FALSE(stream.traits().round_trip_rows);
  EXPECT_FALSE(stream.traits().shared_slots);
  EXPECT_TRUE(stream.traits().costly_workers);
}

TEST(ProcessLoadBackend, ASpanLoadsInTheWorkerProcess) {
  ProcessLoadBackend backend = MakeBackend();
  backend.StartWorker(0);
  std::vector<Sample> samples(4);
  std::vector<RowLoad> rows = Rows({0, 1, 2, 4}, &samples);
  SampleContext ctx(0, 0, 0, /*worker_id=*/0);
  backend.LoadRows(rows, 0, ctx, /*whole_batch=*/false);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].error, nullptr) << "row " << i;
    EXPECT_EQ(Field(samples[i], "index"), rows[i].index);
    EXPECT_NE(Field(samples[i], "pid"), ::getpid());
  }
  EXPECT_EQ(backend.worker_restarts(), 0);
}

TEST(ProcessLoadBackend, ARowThatKillsItsProcessInsideASpanFailsAlone) {
  ProcessLoadBackend backend = MakeBackend();
  backend.StartWorker(0);
  std::vector<Sample> samples(5);
  std::vector<RowLoad> rows = Rows({1, 2, kDeadly, 4, 5}, &samples);
  SampleContext ctx(0, 0, 0, 0);
  backend.LoadRows(rows, 0, ctx, /*whole_batch=*/false);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].index == kDeadly) {
      ASSERT_NE(rows[i].error, nullptr);
      EXPECT_EQ(KindOf(rows[i].error), FailureKind::kWorkerDied);
    } else {
      EXPECT_EQ(rows[i].error, nullptr) << "row " << i;
      EXPECT_EQ(Field(samples[i], "index"), rows[i].index);
    }
  }
  EXPECT_GE(backend.worker_restarts(), 1);
}

TEST(ProcessLoadBackend, ARowOutOfRangeFailsAlone) {
  ProcessLoadBackend backend = MakeBackend();
  backend.StartWorker(0);
  std::vector<Sample> samples(3);
  std::vector<RowLoad> rows = Rows({0, 8, 1}, &samples);
  SampleContext ctx(0, 0, 0, 0);
  backend.LoadRows(rows, 0, ctx, /*whole_batch=*/false);
  EXPECT_EQ(rows[0].error, nullptr);
  EXPECT_NE(rows[1].error, nullptr);
  EXPECT_EQ(rows[2].error, nullptr);
  EXPECT_EQ(Field(samples[2], "index"), 1);
}

TEST(ProcessLoadBackend, AWorkerInitThatFailsInTheChildIsAWorkerInitError) {
  ProcessLoadBackend backend =
      MakeBackend([](int) { throw std::runtime_error("no GPU for worker"); });
  try {
    backend.StartWorker(0);
    FAIL() << "the failed worker_init went unnoticed";
  } catch (const WorkerInitError& e) {
    EXPECT_EQ(e.worker(), 0);
    EXPECT_THAT(e.what(), HasSubstr("worker_init failed: no GPU for worker"));
  }
}

}  // namespace
}  // namespace feedline::internal

namespace feedline::internal {
namespace {

// Counts the replies the parent checks; refuses every one with `refuse`.
class CountingProgram : public NativeWorkerProgram {
 public:
  CountingProgram(std::shared_ptr<const Dataset> dataset, bool refuse)
      : NativeWorkerProgram(std::move(dataset), {}), refuse_(refuse) {}
  void CheckSchema(const SampleSchema&) const override {
    checks.fetch_add(1);
    if (refuse_) throw SampleError(FailureKind::kType, "", "refused");
  }
  mutable std::atomic<int> checks{0};

 private:
  const bool refuse_;
};

// Rows loaded in requests of `per_request`, 16 in all; returns the failed rows.
int LoadSixteen(ProcessLoadBackend& backend, size_t per_request) {
  int failed = 0;
  SampleContext ctx(0, 0, 0, /*worker_id=*/0);
  for (int64_t first = 0; first < 16; first += static_cast<int64_t>(per_request)) {
    std::vector<Sample> samples(per_request);
    std::vector<int64_t> indices;
    for (size_t i = 0; i < per_request; ++i) indices.push_back((first + static_cast<int64_t>(i)) % 8);
    std::vector<RowLoad> rows = Rows(indices, &samples);
    backend.LoadRows(rows, 0, ctx, /*whole_batch=*/false);
    for (const RowLoad& row : rows) failed += row.error != nullptr ? 1 : 0;
  }
  return failed;
}

class Harmless : public Dataset {
 public:
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    out.SetScalar<int64_t>("index", index);
  }
};

TEST(ProcessLoadBackend, AWorkersRepeatedSchemaIsCheckedOnceNotPerSample) {
  // Every reply carries the sample's schema; checking it per sample would
  // sit on each round trip's path (the worker idles meanwhile).
  auto dataset = std::make_shared<Harmless>();
  ProcessWorkerOptions options;
  options.num_workers = 1;
  auto program = std::make_shared<CountingProgram>(dataset, /*refuse=*/false);
  ProcessLoadBackend backend(std::make_shared<ProcessWorkers>(program, options), dataset->size());
  backend.StartWorker(0);
  EXPECT_EQ(LoadSixteen(backend, 4), 0);  // four requests of four rows
  EXPECT_EQ(LoadSixteen(backend, 1), 0);  // sixteen of one
  EXPECT_EQ(program->checks.load(), 1);
}

TEST(ProcessLoadBackend, ARefusedSchemaIsCheckedAgainAndEachSampleFails) {
  auto dataset = std::make_shared<Harmless>();
  ProcessWorkerOptions options;
  options.num_workers = 1;
  auto program = std::make_shared<CountingProgram>(dataset, /*refuse=*/true);
  ProcessLoadBackend backend(std::make_shared<ProcessWorkers>(program, options), dataset->size());
  backend.StartWorker(0);
  EXPECT_EQ(LoadSixteen(backend, 4), 16);
  EXPECT_EQ(program->checks.load(), 16);
}

}  // namespace
}  // namespace feedline::internal
