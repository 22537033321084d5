// The one child loop: a WorkerTask of the test's own, run in a forked child
// by RunWorkerChild, the test playing the parent on the other end of the
// channel: every request kind reaches the task, its fields and failures come
// back as replies, and a batch of the samples it kept crosses as one reply.
#include "src/process/child_loop.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/process/worker_protocol.h"
#include "process/forked_worker.h"

namespace feedline::internal {
namespace {

using extension::TaskOutput;
using extension::TaskRequest;
using extension::WorkerTask;
using extension::WorkerTaskInfo;
using ::testing::HasSubstr;

// What the task throws for sample 3: not a std::exception, reported by its
// own Failure.
struct Refusal {};

// Sample i: "x" = i * 10 and "waits" = the waits for a request so far; it
// keeps x, and collates kept samples into "sum". Sample 3 is refused.
class KeepingTask : public WorkerTask {
 public:
  explicit KeepingTask(bool fail_start) : fail_start_(fail_start) {}
  void Start() override {
    if (fail_start_) throw std::runtime_error("no device for this worker");
  }
  void Load(const TaskRequest& request, TaskOutput& out) override {
    if (request.index == 3) throw Refusal{};
    const int64_t x = request.index * 10;
    std::memcpy(out.Field("x", DType::kI64, Shape()).raw(), &x, sizeof(x));
    std::memcpy(out.Field("waits", DType::kI64, Shape()).raw(), &waits_, sizeof(waits_));
    kept_[next_reply_++] = x;
  }
  bool Collate(std::span<const int64_t> replies, TaskOutput& out) override {
    int64_t sum = 0;
    for (int64_t reply : replies) {
      auto it = kept_.find(reply);
      if (it == kept_.end()) return false;
      sum += it->second;
    }
    std::memcpy(out.Field("sum", DType::kI64, Shape()).raw(), &sum, sizeof(sum));
    return true;
  }
  void AfterWait() override { ++waits_; }
  ErrorReply Failure(std::exception_ptr error) const override {
    try {
      std::rethrow_exception(error);
    } catch (const Refusal&) {
      return extension::ExceptionReply("refused by the task", "Refusal");
    } catch (...) {
      return WorkerTask::Failure(std::current_exception());
    }
  }

 private:
  const bool fail_start_;
  int64_t waits_ = 0;
  int64_t next_reply_ = 0;
  std::map<int64_t, int64_t> kept_;
};

class KeepingProgram : public extension::WorkerProgram {
 public:
  explicit KeepingProgram(bool fail_start = false) : fail_start_(fail_start) {}
  std::unique_ptr<WorkerTask> MakeTask(const WorkerTaskInfo&) override {
    return std::make_unique<KeepingTask>(fail_start_);
  }

 private:
  const bool fail_start_;
};

// The body of a request for several samples (kSamples) or replies
// (kCollate): each listed as a kSamples request lists its samples.
std::string ListBody(const std::vector<int64_t>& list) {
  std::string body;
  for (int64_t i : list) EncodeRequestedSample(i, i, std::string(), &body);
  return body;
}

// Field `name` (an i64 scalar) of a sample reply.
int64_t LoopField(const WorkerReply& reply, const std::string& name) {
  EXPECT_EQ(reply.kind, ReplyKind::kSample);
  SampleReply sample;
  EXPECT_TRUE(DecodeSampleReply(reply.body.data(), reply.body.size(), &sample));
  for (const FieldMeta& f : sample.fields) {
    if (f.name != name) continue;
    int64_t value = -1;
    if (reply.payload.size() >= f.offset + sizeof(value)) {
      std::memcpy(&value, reply.payload.data() + f.offset, sizeof(value));
    }
    return value;
  }
  ADD_FAILURE() << "no field " << name;
  return -1;
}

ErrorReply LoopError(const WorkerReply& reply) {
  EXPECT_EQ(reply.kind, ReplyKind::kError);
  ErrorReply error;
  EXPECT_TRUE(DecodeErrorReply(reply.body.data(), reply.body.size(), &error));
  return error;
}

TEST(ChildLoopTest, TheTaskLoadsEachRequestedSampleBetweenWaits) {
  KeepingProgram program;
  ForkedWorker child(program);
  ASSERT_EQ(child.Read().kind, ReplyKind::kReady);
  child.Send(RequestKind::kSample, 1);
  const WorkerReply first = child.Read();
  EXPECT_EQ(LoopField(first, "x"), 10);
  EXPECT_EQ(LoopField(first, "waits"), 1) << "the task is told of each wait for a request";
  child.Send(RequestKind::kSample, 2);
  EXPECT_EQ(LoopField(child.Read(), "waits"), 2);
  EXPECT_EQ(child.ExitStatus(), 0) << "end of file ends the child cleanly";
}

TEST(ChildLoopTest, AFailedSampleAmongSeveralIsItsOwnReplyAsTheTaskReportsIt) {
  KeepingProgram program;
  ForkedWorker child(program);
  ASSERT_EQ(child.Read().kind, ReplyKind::kReady);
  child.Send(RequestKind::kSamples, 3, 0, ListBody({2, 3, 4}));
  EXPECT_EQ(LoopField(child.Read(), "x"), 20);
  const ErrorReply refused = LoopError(child.Read());
  EXPECT_EQ(refused.message, "refused by the task");
  EXPECT_EQ(refused.origin.exception_type, "Refusal");
  EXPECT_EQ(LoopField(child.Read(), "x"), 40) << "the samples after it still load";
}

TEST(ChildLoopTest, KeptSamplesCrossAsOneCollatedBatch) {
  KeepingProgram program;
  ForkedWorker child(program);
  ASSERT_EQ(child.Read().kind, ReplyKind::kReady);
  child.Send(RequestKind::kSamples, 3, 0, ListBody({1, 2, 5}));  // replies 0, 1, 2
  for (int i = 0; i < 3; ++i) EXPECT_EQ(child.Read().kind, ReplyKind::kSample);
  child.Send(RequestKind::kCollate, 2, 0, ListBody({0, 2}));
  EXPECT_EQ(LoopField(child.Read(), "sum"), 10 + 50);
  child.Send(RequestKind::kCollate, 2, 0, ListBody({1, 7}));
  EXPECT_EQ(child.Read().kind, ReplyKind::kEnd) << "reply 7 is not held: the parent collates";
}

TEST(ChildLoopTest, ARequestThatCompletesABatchGetsItsCollateInTheSameExchange) {
  KeepingProgram program;
  ForkedWorker child(program);
  ASSERT_EQ(child.Read().kind, ReplyKind::kReady);
  child.Send(RequestKind::kSample, 7);  // reply 0, before the batch
  EXPECT_EQ(LoopField(child.Read(), "x"), 70);
  // Two messages for the batch: the request, and its samples' replies
  // followed by the batch of them, numbered from the replies before.
  child.Send(RequestKind::kSamplesThenCollate, 3, 0, ListBody({1, 2, 5}));  // replies 1, 2, 3
  EXPECT_EQ(LoopField(child.Read(), "x"), 10);
  EXPECT_EQ(LoopField(child.Read(), "x"), 20);
  EXPECT_EQ(LoopField(child.Read(), "x"), 50);
  EXPECT_EQ(LoopField(child.Read(), "sum"), 10 + 20 + 50);
  // The batch reply is no sample reply: the next sample is reply 4.
  child.Send(RequestKind::kSample, 4);
  EXPECT_EQ(LoopField(child.Read(), "x"), 40);
  child.Send(RequestKind::kCollate, 2, 0, ListBody({0, 4}));
  EXPECT_EQ(LoopField(child.Read(), "sum"), 70 + 40);
}

TEST(ChildLoopTest, ABatchWithAFailedSampleIsNotCollatedInTheSameExchange) {
  KeepingProgram program;
  ForkedWorker child(program);
  ASSERT_EQ(child.Read().kind, ReplyKind::kReady);
  // Sample 3 fails: its substitute belongs to the batch, so the child makes
  // no batch (kEnd) and the parent asks for it once the batch is whole.
  child.Send(RequestKind::kSamplesThenCollate, 3, 0, ListBody({2, 3, 4}));
  EXPECT_EQ(LoopField(child.Read(), "x"), 20);
  EXPECT_EQ(LoopError(child.Read()).message, "refused by the task");
  EXPECT_EQ(LoopField(child.Read(), "x"), 40);
  EXPECT_EQ(child.Read().kind, ReplyKind::kEnd);
  child.Send(RequestKind::kSample, 6);  // the substitute: reply 2
  EXPECT_EQ(LoopField(child.Read(), "x"), 60);
  child.Send(RequestKind::kCollate, 3, 0, ListBody({0, 2, 1}));
  EXPECT_EQ(LoopField(child.Read(), "sum"), 20 + 60 + 40);
}

TEST(ChildLoopTest, AStartThatThrowsIsAFailedStartNamingWhy) {
  KeepingProgram program(/*fail_start=*/true);
  ForkedWorker child(program);
  const ErrorReply error = LoopError(child.Read());
  EXPECT_EQ(error.cause, ErrorCause::kWorkerInit);
  EXPECT_THAT(error.message, HasSubstr("no device for this worker"));
  EXPECT_EQ(child.ExitStatus(), 1);
}

TEST(ChildLoopTest, AStreamRequestToAMapStyleTaskIsRefusedAndTheChildGoesOn) {
  KeepingProgram program;
  ForkedWorker child(program);
  ASSERT_EQ(child.Read().kind, ReplyKind::kReady);
  child.Send(RequestKind::kOpen, 0);
  EXPECT_THAT(LoopError(child.Read()).message, HasSubstr("not a stream"));
  child.Send(RequestKind::kSample, 4);
  EXPECT_EQ(LoopField(child.Read(), "x"), 40);
}

}  // namespace
}  // namespace feedline::internal
