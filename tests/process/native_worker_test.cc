// NativeWorkerProgram: its task, run by the library's child loop in a forked
// child, serves a C++ Dataset's samples (or an IterableDataset's pass) over
// the worker protocol. The test forks the child and plays the parent on the
// other end of its socket.
#include "src/process/native_worker.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "feedline/dataset.h"
#include "feedline/error.h"
#include "feedline/iterable_dataset.h"
#include "src/process/child_loop.h"
#include "src/process/worker_child.h"
#include "src/process/worker_protocol.h"
#include "process/forked_worker.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

// Sample i: "value" = i * 10 (i64). Sample 3 fails to decode; sample 4
// throws a plain std::runtime_error; sample 5 runs out of memory.
class TensDataset : public Dataset {
 public:
  int64_t size() const override { return 10; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == 3) throw SampleError(FailureKind::kDecode, "item3.bin", "bad bytes");
    if (index == 4) throw std::runtime_error("plain failure");
    if (index == 5) throw std::bad_alloc();
    out.SetScalar<int64_t>("value", index * 10);
  }
};

// Worker w's pass of epoch e: `count` items "item" = w * 100 + e * 10 + k.
class CountingStream : public IterableDataset {
 public:
  std::unique_ptr<SampleStream> Open(int worker, int, int64_t epoch) const override {
    if (epoch < 0) throw SampleError(FailureKind::kIo, "stream", "no such epoch");
    struct Pass : SampleStream {
      int64_t base;
      int left = 2;
      bool Next(Sample& out, SampleContext&) override {
        if (left == 0) return false;
        out.SetScalar<int64_t>("item", base + 2 - left);
        --left;
        return true;
      }
    };
    auto pass = std::make_unique<Pass>();
    pass->base = worker * 100 + epoch * 10;
    return pass;
  }
};

// The i64 scalar of a sample reply whose one field came through the socket.
int64_t ScalarOf(const WorkerReply& reply) {
  SampleReply sample;
  EXPECT_TRUE(DecodeSampleReply(reply.body.data(), reply.body.size(), &sample));
  EXPECT_EQ(sample.fields.size(), 1u);
  int64_t value = 0;
  if (sample.fields.empty() || reply.payload.size() < sample.fields[0].offset + 8) return -1;
  std::memcpy(&value, reply.payload.data() + sample.fields[0].offset, sizeof(value));
  return value;
}

ErrorReply ErrorOf(const WorkerReply& reply) {
  EXPECT_EQ(reply.kind, ReplyKind::kError);
  ErrorReply error;
  EXPECT_TRUE(DecodeErrorReply(reply.body.data(), reply.body.size(), &error));
  return error;
}

// A worker process serving TensDataset, past its kReady.
class TensWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(worker_.Read().kind, ReplyKind::kReady); }

  NativeWorkerProgram program_{std::make_shared<TensDataset>(), nullptr};
  ForkedWorker worker_{program_};
};

TEST_F(TensWorkerTest, ServesSamplesAfterReportingReadyAndExitsAtEndOfFile) {
  worker_.Send(RequestKind::kSample, 7);
  const WorkerReply reply = worker_.Read();
  ASSERT_EQ(reply.kind, ReplyKind::kSample);
  EXPECT_EQ(ScalarOf(reply), 70);
  worker_.Send(RequestKind::kSample, 2);
  EXPECT_EQ(ScalarOf(worker_.Read()), 20);
  EXPECT_EQ(worker_.ExitStatus(), 0);
}

TEST_F(TensWorkerTest, AFailedSampleIsAnErrorReplyAndTheWorkerGoesOn) {
  worker_.Send(RequestKind::kSample, 3);
  const ErrorReply decode = ErrorOf(worker_.Read());
  EXPECT_EQ(decode.cause, ErrorCause::kSample);
  EXPECT_EQ(decode.kind, FailureKind::kDecode);
  EXPECT_EQ(decode.source, "item3.bin");
  EXPECT_THAT(decode.message, HasSubstr("bad bytes"));
  worker_.Send(RequestKind::kSample, 4);
  const ErrorReply plain = ErrorOf(worker_.Read());
  EXPECT_EQ(plain.kind, FailureKind::kException);
  EXPECT_THAT(plain.message, HasSubstr("plain failure"));
  worker_.Send(RequestKind::kSample, 5);
  const ErrorReply memory = ErrorOf(worker_.Read());
  EXPECT_EQ(memory.cause, ErrorCause::kInterrupt);
  EXPECT_THROW(program_.RaiseError(memory, 5), std::bad_alloc) << "raised as itself";
  try {
    program_.RaiseError(decode, 3);
    FAIL() << "RaiseError returned";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kDecode);
    EXPECT_EQ(e.index(), 3);
    EXPECT_EQ(e.source(), "item3.bin");
  }
  worker_.Send(RequestKind::kSample, 1);
  EXPECT_EQ(ScalarOf(worker_.Read()), 10);
}

TEST_F(TensWorkerTest, SeveralSamplesInOneRequestAreAnsweredInOrder) {
  std::string body;
  EncodeRequestedSample(8, 0, "", &body);
  EncodeRequestedSample(3, 1, "", &body);
  EncodeRequestedSample(6, 2, "", &body);
  worker_.Send(RequestKind::kSamples, 3, 0, body);
  EXPECT_EQ(ScalarOf(worker_.Read()), 80);
  EXPECT_EQ(ErrorOf(worker_.Read()).kind, FailureKind::kDecode);
  EXPECT_EQ(ScalarOf(worker_.Read()), 60);
}

TEST(NativeWorkerTest, WorkerInitRunsBeforeReadyAndItsFailureEndsTheChild) {
  NativeWorkerProgram good(std::make_shared<TensDataset>(), [](int id) {
    if (id != 1) _exit(9);  // the worker id reaches worker_init
  });
  {
    ForkedWorker worker(good, /*worker_id=*/1);
    EXPECT_EQ(worker.Read().kind, ReplyKind::kReady);
  }
  NativeWorkerProgram bad(std::make_shared<TensDataset>(),
                          [](int) { throw std::runtime_error("no device"); });
  ForkedWorker worker(bad);
  const ErrorReply error = ErrorOf(worker.Read());
  EXPECT_EQ(error.cause, ErrorCause::kWorkerInit);
  EXPECT_THAT(error.message, HasSubstr("worker_init failed: no device"));
  EXPECT_EQ(worker.ExitStatus(), 1);
}

TEST_F(TensWorkerTest, ADatasetsWorkerRefusesStreamRequests) {
  worker_.Send(RequestKind::kOpen, 0);
  EXPECT_THAT(ErrorOf(worker_.Read()).message, HasSubstr("serves map-style samples, not a stream"));
}

TEST(NativeWorkerTest, AStreamsWorkerServesItsPassUntilItsEnd) {
  NativeWorkerProgram program(std::make_shared<CountingStream>(), nullptr);
  ForkedWorker worker(program, /*worker_id=*/1);
  ASSERT_EQ(worker.Read().kind, ReplyKind::kReady);
  worker.Send(RequestKind::kNext, 0);
  EXPECT_THAT(ErrorOf(worker.Read()).message, HasSubstr("no open pass"));
  worker.Send(RequestKind::kOpen, /*worker=*/1, /*epoch=*/2);
  EXPECT_EQ(worker.Read().kind, ReplyKind::kReady);
  worker.Send(RequestKind::kNext, 0);
  EXPECT_EQ(ScalarOf(worker.Read()), 120);
  worker.Send(RequestKind::kNext, 0);
  EXPECT_EQ(ScalarOf(worker.Read()), 121);
  worker.Send(RequestKind::kNext, 0);
  EXPECT_EQ(worker.Read().kind, ReplyKind::kEnd);
  worker.Send(RequestKind::kNext, 0);
  EXPECT_THAT(ErrorOf(worker.Read()).message, HasSubstr("no open pass")) << "the pass ended";
  // A pass that cannot open is an error reply; the worker goes on.
  worker.Send(RequestKind::kOpen, 1, -1);
  const ErrorReply error = ErrorOf(worker.Read());
  EXPECT_EQ(error.kind, FailureKind::kIo);
  EXPECT_THAT(error.message, HasSubstr("no such epoch"));
  worker.Send(RequestKind::kSample, 0);
  EXPECT_THAT(ErrorOf(worker.Read()).message, HasSubstr("serves a stream, not map-style samples"));
}

}  // namespace
}  // namespace feedline::internal
