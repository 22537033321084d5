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
  // The field count follows the arena size, four stage times and the
  // count of images decoded.
  const size_t count_at = sizeof(uint64_t) + 5 * sizeof(int64_t);
  const uint32_t huge = 0xffffffffu;
  std::memcpy(bytes.data() + count_at, &huge, sizeof(huge));
  SampleReply out;
  EXPECT_FALSE(DecodeSampleReply(bytes.data(), bytes.size(), &out));
  EXPECT_TRUE(out.fields.empty());
}

// A namedtuple sample (image, meta) whose meta is {"box": array, "id": str}.
SampleSchema NestedSchema() {
  SampleSchema schema;
  const size_t root = schema.OpenContainer(SampleSchema::kNoParent, SchemaKind::kNamedTuple, "",
                                           SchemaType{"data.records", "Record", true});
  schema.AddLeaf(root, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kU8, "image");
  const size_t meta = schema.OpenContainer(root, SchemaKind::kDict, "meta");
  schema.AddLeaf(meta, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kF32, "box");
  schema.AddLeaf(meta, SchemaKind::kObject, LeafType::kOther, DType::kU8, "id");
  schema.CloseContainer(meta);
  schema.CloseContainer(root);
  return schema;
}

TEST(WorkerProtocol, ASampleReplyRoundTrips) {
  SampleReply reply;
  reply.arena_bytes = 4096;
  reply.stage_ns[1] = 77;
  FieldMeta field;
  field.name = "image";
  field.dtype = DType::kU8;
  field.shape = Shape{8, 8, 3};
  field.bytes = 192;
  reply.fields.push_back(field);
  reply.schema = NestedSchema();
  const std::string bytes = EncodeSampleReply(reply);
  SampleReply out;
  ASSERT_TRUE(DecodeSampleReply(bytes.data(), bytes.size(), &out));
  EXPECT_EQ(out.stage_ns[1], 77);
  ASSERT_EQ(out.fields.size(), 1u);
  EXPECT_EQ(out.fields[0].name, "image");
  EXPECT_EQ(out.fields[0].shape, (Shape{8, 8, 3}));
  EXPECT_EQ(out.schema, reply.schema);
}

TEST(WorkerProtocol, ARepeatedSchemaIsKeptNotDecodedAgainAndAChangedOneIsDecoded) {
  SampleReply reply;
  reply.schema = NestedSchema();
  const std::string nested = EncodeSampleReply(reply);
  reply.schema = SampleSchema();
  const std::string empty = EncodeSampleReply(reply);
  SampleReply out;
  ASSERT_TRUE(DecodeSampleReply(nested.data(), nested.size(), &out));
  EXPECT_FALSE(out.schema_repeated);  // the first reply decoded into `out`
  ASSERT_TRUE(DecodeSampleReply(nested.data(), nested.size(), &out));
  EXPECT_TRUE(out.schema_repeated);
  EXPECT_EQ(out.schema, NestedSchema());
  ASSERT_TRUE(DecodeSampleReply(empty.data(), empty.size(), &out));
  EXPECT_FALSE(out.schema_repeated);
  EXPECT_TRUE(out.schema.empty());
  ASSERT_TRUE(DecodeSampleReply(nested.data(), nested.size(), &out));
  EXPECT_FALSE(out.schema_repeated);
  EXPECT_EQ(out.schema, NestedSchema());
}

TEST(WorkerProtocol, ASchemaCrossesAsTypedNodesWithItsPathsRebuilt) {
  std::string bytes;
  EncodeSampleSchema(NestedSchema(), &bytes);
  SampleSchema out;
  ASSERT_TRUE(DecodeSampleSchema(bytes.data(), bytes.size(), &out));
  EXPECT_EQ(out.FieldNames(),
            (std::vector<std::string>{"0", "1[\"box\"]", "1[\"id\"]"}));
  EXPECT_EQ(out.root().type.module, "data.records");
  EXPECT_EQ(out.node(3).key, "box");
  EXPECT_EQ(out.node(4).kind, SchemaKind::kObject);
}

TEST(WorkerProtocol, ANativeSampleHasAnEmptySchema) {
  std::string bytes;
  EncodeSampleSchema(SampleSchema(), &bytes);
  SampleSchema out = NestedSchema();
  ASSERT_TRUE(DecodeSampleSchema(bytes.data(), bytes.size(), &out));
  EXPECT_TRUE(out.empty());
}

TEST(WorkerProtocol, ADamagedSchemaIsRefused) {
  std::string bytes;
  EncodeSampleSchema(NestedSchema(), &bytes);
  SampleSchema out;
  // Cut anywhere: a container lacks children it announced, or a node its bytes.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(DecodeSampleSchema(bytes.data(), cut, &out)) << "cut at " << cut;
  }
  // A kind past the last.
  std::string bad = bytes;
  bad[4] = static_cast<char>(static_cast<uint8_t>(kLastSchemaKind) + 1);
  EXPECT_FALSE(DecodeSampleSchema(bad.data(), bad.size(), &out));
  // A second root after the first one's subtree.
  std::string two;
  SampleSchema leaf;
  leaf.AddLeaf(SampleSchema::kNoParent, SchemaKind::kTensor, LeafType::kNumpyArray, DType::kU8,
               "");
  EncodeSampleSchema(leaf, &two);
  const uint32_t count = 2;
  std::memcpy(two.data(), &count, sizeof(count));
  two.append(two.substr(sizeof(count)));
  EXPECT_FALSE(DecodeSampleSchema(two.data(), two.size(), &out));
  // A node count beyond the bytes.
  std::string huge = bytes;
  const uint32_t many = 0xffffffffu;
  std::memcpy(huge.data(), &many, sizeof(many));
  EXPECT_FALSE(DecodeSampleSchema(huge.data(), huge.size(), &out));
}

}  // namespace
}  // namespace feedline::internal
