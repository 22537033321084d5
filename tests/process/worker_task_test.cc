// WorkerTask's defaults: what a task that overrides nothing refuses, and how
// the exception in flight becomes the failure the parent raises.
#include "feedline/extension/worker_task.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "feedline/error.h"

namespace feedline::extension {
namespace {

using ::testing::HasSubstr;

// The failure `task` reports for `thrown`, thrown and caught as the child
// loop catches it.
template <typename Thrown>
ErrorReply FailureFor(const WorkerTask& task, Thrown thrown) {
  try {
    throw thrown;
  } catch (...) {
    return task.Failure(std::current_exception());
  }
}

TEST(WorkerTaskTest, ASampleErrorKeepsItsKindSourceAndOrigin) {
  FailureOrigin origin;
  origin.exception_type = "ValueError";
  const ErrorReply error =
      FailureFor(WorkerTask(), SampleError(FailureKind::kDecode, "a.jpg", "bad bytes", 7, origin));
  EXPECT_EQ(error.cause, ErrorCause::kSample);
  EXPECT_EQ(error.kind, FailureKind::kDecode);
  EXPECT_EQ(error.source, "a.jpg");
  EXPECT_EQ(error.message, "bad bytes");
  EXPECT_EQ(error.origin.exception_type, "ValueError");
}

TEST(WorkerTaskTest, OutOfMemoryIsAnInterruptTheParentRaisesAsItself) {
  const ErrorReply error = FailureFor(WorkerTask(), std::bad_alloc());
  EXPECT_EQ(error.cause, ErrorCause::kInterrupt);
  EXPECT_EQ(error.origin.exception_type, kBadAllocType);
}

TEST(WorkerTaskTest, AnyOtherExceptionIsAFailedSampleWithItsMessage) {
  const ErrorReply error = FailureFor(WorkerTask(), std::runtime_error("disk on fire"));
  EXPECT_EQ(error.cause, ErrorCause::kSample);
  EXPECT_EQ(error.kind, FailureKind::kException);
  EXPECT_EQ(error.message, "disk on fire");
  EXPECT_THAT(FailureFor(WorkerTask(), 42).message, HasSubstr("not a std::exception"));
}

TEST(WorkerTaskTest, ATaskRefusesTheRequestsItDoesNotServe) {
  WorkerTask task;
  TaskRequest request;
  // A map-style task has no stream; a stream's task no samples: each
  // refusal is an Error the loop reports as that request's failure.
  EXPECT_THROW(task.OpenPass(request), Error);
  class NoOutput : public TaskOutput {
    Tensor Field(const std::string&, DType, const Shape&) override { return Tensor(); }
    void SetSchema(SampleSchema) override {}
    void Bind(Sample&) override {}
    void Put(const Sample&) override {}
  } out;
  EXPECT_THROW(task.Load(request, out), Error);
  EXPECT_THROW(task.Next(request, out), Error);
  const int64_t replies[] = {0, 1};
  EXPECT_FALSE(task.Collate(replies, out)) << "nothing held: the parent collates";
}

TEST(WorkerTaskTest, TheReportsNameTheirCause) {
  EXPECT_EQ(WorkerInitReply("no GPU").cause, ErrorCause::kWorkerInit);
  EXPECT_EQ(WorkerInitReply("no GPU").message, "no GPU");
  const ErrorReply interrupt = InterruptReply("KeyboardInterrupt", "^C");
  EXPECT_EQ(interrupt.cause, ErrorCause::kInterrupt);
  EXPECT_EQ(interrupt.origin.exception_type, "KeyboardInterrupt");
  EXPECT_EQ(ExceptionReply("boom", "KeyError").origin.exception_type, "KeyError");
}

}  // namespace
}  // namespace feedline::extension
