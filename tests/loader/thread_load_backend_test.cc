// ThreadLoadBackend (src/loader/thread_load_backend.h): a span of rows
// loaded by Dataset::Get, each with its own context, a failing row failing
// alone; starting a worker runs worker_init, whose failure names the worker.
#include "src/loader/thread_load_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "feedline/error.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

// Sample i: "index" = i and the context's epoch and index; index 2 throws.
class Recording : public Dataset {
 public:
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    if (index == 2) throw std::runtime_error("bad row");
    out.SetScalar<int64_t>("index", index);
    out.SetScalar<int64_t>("ctx_epoch", ctx.epoch());
    out.SetScalar<int64_t>("ctx_index", ctx.index());
  }
};

int64_t Field(const Sample& sample, const char* name) {
  for (int f = 0; f < sample.num_fields(); ++f) {
    if (sample.field_name(f) == name) return sample.field(f).data<int64_t>()[0];
  }
  ADD_FAILURE() << "no field " << name;
  return -1;
}

TEST(ThreadLoadBackend, LoadsEachRowOfASpanWithItsOwnContext) {
  Recording dataset;
  ThreadLoadBackend backend(&dataset);
  std::vector<Sample> samples(3);
  std::vector<RowLoad> rows = {{5, &samples[0], nullptr}, {1, &samples[1], nullptr},
                               {7, &samples[2], nullptr}};
  SampleContext ctx(/*seed=*/3, 0, 0, /*worker_id=*/0);
  backend.LoadRows(rows, /*epoch=*/4, ctx, /*whole_batch=*/false);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].error, nullptr);
    EXPECT_EQ(Field(samples[i], "index"), rows[i].index);
    EXPECT_EQ(Field(samples[i], "ctx_epoch"), 4);
    EXPECT_EQ(Field(samples[i], "ctx_index"), rows[i].index);
  }
}

TEST(ThreadLoadBackend, ARowThatThrowsFailsAlone) {
  Recording dataset;
  ThreadLoadBackend backend(&dataset);
  std::vector<Sample> samples(3);
  std::vector<RowLoad> rows = {{1, &samples[0], nullptr}, {2, &samples[1], nullptr},
                               {3, &samples[2], nullptr}};
  SampleContext ctx(0, 0, 0, 0);
  backend.LoadRows(rows, 0, ctx, /*whole_batch=*/false);
  EXPECT_EQ(rows[0].error, nullptr);
  EXPECT_EQ(rows[2].error, nullptr);
  ASSERT_NE(rows[1].error, nullptr);
  try {
    std::rethrow_exception(rows[1].error);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad row");  // what Get threw, as it threw it
  }
  EXPECT_EQ(Field(samples[2], "index"), 3);
}

TEST(ThreadLoadBackend, StartingAWorkerRunsWorkerInit) {
  Recording dataset;
  EXPECT_FALSE(ThreadLoadBackend(&dataset).traits().starts_workers);
  std::vector<int> started;
  ThreadLoadBackend backend(&dataset, [&](int worker) { started.push_back(worker); });
  EXPECT_TRUE(backend.traits().starts_workers);
  EXPECT_FALSE(backend.traits().costly_workers);
  EXPECT_FALSE(backend.traits().round_trip_rows);
  backend.StartWorker(1);
  backend.StartWorker(0);
  EXPECT_EQ(started, (std::vector<int>{1, 0}));
}

TEST(ThreadLoadBackend, AFailedWorkerInitIsAWorkerInitErrorNamingTheWorker) {
  Recording dataset;
  ThreadLoadBackend backend(&dataset, [](int) { throw std::runtime_error("no GPU here"); });
  try {
    backend.StartWorker(3);
    FAIL() << "the failed worker_init went unnoticed";
  } catch (const WorkerInitError& e) {
    EXPECT_EQ(e.worker(), 3);
    EXPECT_THAT(e.what(), HasSubstr("worker_init failed in worker 3: no GPU here"));
  }
}

TEST(ThreadLoadBackend, AnInterruptInWorkerInitPassesAsItIs) {
  struct Interrupt {};  // not a std::exception, as Python's KeyboardInterrupt in the binding
  Recording dataset;
  ThreadLoadBackend backend(&dataset, [](int) { throw Interrupt{}; });
  EXPECT_THROW(backend.StartWorker(0), Interrupt);
}

}  // namespace
}  // namespace feedline::internal
