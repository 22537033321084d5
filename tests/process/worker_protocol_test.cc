#include "src/process/worker_protocol.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace feedline::internal {
namespace {

ErrorReply RoundTrip(const ErrorReply& reply) {
  const std::string bytes = EncodeErrorReply(reply);
  ErrorReply out;
  EXPECT_TRUE(DecodeErrorReply(bytes.data(), bytes.size(), &out));
  return out;
}

TEST(WorkerProtocol, AnErrorReplyCarriesItsKindAndTheExceptionTypeAsData) {
  FailureOrigin origin;
  origin.exception_type = "mypkg.errors.BadRecord";
  const SampleError error(FailureKind::kCollate, "shard-3.tar", "collate_fn raised ...", 5, origin);
  const ErrorReply out = RoundTrip(SampleErrorReply(error));
  EXPECT_EQ(out.cause, ErrorCause::kSample);
  EXPECT_EQ(out.kind, FailureKind::kCollate);
  EXPECT_EQ(out.source, "shard-3.tar");
  EXPECT_EQ(out.message, "collate_fn raised ...");
  EXPECT_EQ(out.origin.exception_type, "mypkg.errors.BadRecord");
}

TEST(WorkerProtocol, InterruptAndWorkerInitRepliesKeepTheirCause) {
  const ErrorReply interrupt = RoundTrip(InterruptReply("KeyboardInterrupt", "stop"));
  EXPECT_EQ(interrupt.cause, ErrorCause::kInterrupt);
  EXPECT_EQ(interrupt.origin.exception_type, "KeyboardInterrupt");
  EXPECT_EQ(interrupt.message, "stop");
  const ErrorReply init = RoundTrip(WorkerInitReply("worker_init_fn raised ValueError: no"));
  EXPECT_EQ(init.cause, ErrorCause::kWorkerInit);
  EXPECT_EQ(init.message, "worker_init_fn raised ValueError: no");
  const ErrorReply plain = RoundTrip(ExceptionReply("it threw", "KeyError"));
  EXPECT_EQ(plain.cause, ErrorCause::kSample);
  EXPECT_EQ(plain.kind, FailureKind::kException);
  EXPECT_EQ(plain.origin.exception_type, "KeyError");
}

TEST(WorkerProtocol, AnErrorReplyOfNoKnownKindOrCauseIsRefused) {
  std::string bytes = EncodeErrorReply(ExceptionReply("x"));
  ErrorReply out;
  std::string bad_cause = bytes;
  bad_cause[0] = 3;
  EXPECT_FALSE(DecodeErrorReply(bad_cause.data(), bad_cause.size(), &out));
  std::string bad_kind = bytes;
  bad_kind[1] = static_cast<char>(kFailureKindCount);
  EXPECT_FALSE(DecodeErrorReply(bad_kind.data(), bad_kind.size(), &out));
  EXPECT_FALSE(DecodeErrorReply(bytes.data(), bytes.size() - 1, &out));  // cut short
  EXPECT_TRUE(DecodeErrorReply(bytes.data(), bytes.size(), &out));
}

TEST(WorkerProtocol, ASampleReplyCountingMoreFieldsThanItsBytesIsRefused) {
  SampleReply reply;
  reply.arena_bytes = 64;
  std::string bytes = EncodeSampleReply(reply);
  // The field count follows the layout, the arena size and four stage times.
  const size_t count_at = sizeof(int32_t) + sizeof(uint64_t) + 4 * sizeof(int64_t);
  const uint32_t huge = 0xffffffffu;
  std::memcpy(bytes.data() + count_at, &huge, sizeof(huge));
  SampleReply out;
  EXPECT_FALSE(DecodeSampleReply(bytes.data(), bytes.size(), &out));
  EXPECT_TRUE(out.fields.empty());
}

TEST(WorkerProtocol, ASampleReplyRoundTrips) {
  SampleReply reply;
  reply.layout = 2;
  reply.arena_bytes = 4096;
  reply.stage_ns[1] = 77;
  FieldMeta field;
  field.name = "image";
  field.dtype = DType::kU8;
  field.shape = Shape{8, 8, 3};
  field.bytes = 192;
  reply.fields.push_back(field);
  reply.detail = "skeleton";
  const std::string bytes = EncodeSampleReply(reply);
  SampleReply out;
  ASSERT_TRUE(DecodeSampleReply(bytes.data(), bytes.size(), &out));
  EXPECT_EQ(out.layout, 2);
  EXPECT_EQ(out.stage_ns[1], 77);
  ASSERT_EQ(out.fields.size(), 1u);
  EXPECT_EQ(out.fields[0].name, "image");
  EXPECT_EQ(out.fields[0].shape, (Shape{8, 8, 3}));
  EXPECT_EQ(out.detail, "skeleton");
}

}  // namespace
}  // namespace feedline::internal
