// The child's side of a worker process: reading a request and the batch row
// it names (RequestedRow), and staging a sample's arrays for the reply
// (ReplyStaging), over a socket pair as between a child and its parent.
#include "src/process/worker_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "src/core/inherited_fds.h"
#include "src/process/process_spawner.h"
#include "src/process/shared_arena.h"
#include "src/process/worker_protocol.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

// Both ends of a socket pair: `parent` writes requests, `child` reads them.
class Channel {
 public:
  Channel() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) throw Error("socketpair failed");
    parent = fds[0];
    child = fds[1];
  }
  ~Channel() {
    if (parent >= 0) ::close(parent);
    if (child >= 0) ::close(child);
  }
  void CloseParent() {
    ::close(parent);
    parent = -1;
  }
  // Sends `request` with `body` (its destinations_bytes set to the body's size).
  void Send(WorkRequest request, const std::string& body = {}) {
    request.destinations_bytes = static_cast<uint32_t>(body.size());
    ASSERT_TRUE(WriteAll(parent, &request, sizeof(request)));
    if (!body.empty()) {
      ASSERT_TRUE(WriteAll(parent, body.data(), body.size()));
    }
  }
  // Sends a kSamples request that says `count` samples follow in `body`.
  void SendSamples(int64_t count, const std::string& body) {
    WorkRequest request;
    request.kind = static_cast<uint32_t>(RequestKind::kSamples);
    request.index = count;
    Send(request, body);
  }
  int parent = -1;
  int child = -1;
};

// Shared slots of 256 bytes, as the child inherits them.
struct Slots {
  alignas(64) std::byte memory[256] = {};
  WorkerChannel channel() {
    WorkerChannel c;
    c.slots_base = memory;
    c.slots_bytes = sizeof(memory);
    return c;
  }
};

std::string Destinations(const std::vector<RowDestination>& row) {
  std::string out;
  EncodeDestinations(row, &out);
  return out;
}

RowDestination At(std::string name, DType dtype, Shape shape, uint64_t offset, bool soft = false) {
  RowDestination d;
  d.name = std::move(name);
  d.dtype = dtype;
  d.shape = shape;
  d.offset = offset;
  d.soft = soft;
  return d;
}

TEST(RequestedRowTest, ReadsARequestAndFindsItsFieldsInTheSlots) {
  Slots slots;
  Channel channel;
  WorkRequest sent;
  sent.index = 42;
  sent.epoch = 3;
  sent.context_index = 7;
  channel.Send(sent, Destinations({At("image", DType::kU8, Shape{4, 4}, 64),
                                   At("label", DType::kI64, Shape{}, 128)}));
  RequestedRow row(slots.channel());
  WorkRequest request;
  ASSERT_TRUE(row.Read(channel.child, &request));
  EXPECT_EQ(request.index, 42);
  EXPECT_EQ(request.epoch, 3);
  EXPECT_EQ(request.context_index, 7);
  EXPECT_EQ(row.Find("image", DType::kU8, Shape{4, 4}), slots.memory + 64);
  EXPECT_EQ(row.Find("label", DType::kI64, Shape{}), slots.memory + 128);
  // Another dtype or shape, or a field the row does not have: the arena.
  EXPECT_EQ(row.Find("image", DType::kU8, Shape{4, 5}), nullptr);
  EXPECT_EQ(row.Find("label", DType::kI32, Shape{}), nullptr);
  EXPECT_EQ(row.Find("mask", DType::kU8, Shape{4, 4}), nullptr);
}

TEST(RequestedRowTest, ReadsTheBatchAfterTheDestinations) {
  Slots slots;
  Channel channel;
  WorkRequest sent;
  sent.batch_rows = 3;
  const int64_t batch[3] = {9, 4, 17};
  channel.Send(sent, Destinations({At("label", DType::kI64, Shape{}, 128)}));
  ASSERT_TRUE(WriteAll(channel.parent, batch, sizeof(batch)));
  // A request without a batch next: the last one's is not kept.
  channel.Send(WorkRequest{});
  RequestedRow row(slots.channel());
  WorkRequest request;
  ASSERT_TRUE(row.Read(channel.child, &request));
  EXPECT_EQ(std::vector<int64_t>(row.batch().begin(), row.batch().end()),
            (std::vector<int64_t>{9, 4, 17}));
  EXPECT_EQ(row.Find("label", DType::kI64, Shape{}), slots.memory + 128);
  ASSERT_TRUE(row.Read(channel.child, &request));
  EXPECT_TRUE(row.batch().empty());
}

TEST(RequestedRowTest, AnImpossibleBatchIsAMalformedRequest) {
  Slots slots;
  Channel channel;
  WorkRequest sent;
  sent.batch_rows = uint64_t{1} << 40;
  channel.Send(sent);
  RequestedRow row(slots.channel());
  WorkRequest request;
  try {
    row.Read(channel.child, &request);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("malformed request: a batch of"), std::string::npos);
  }
}

TEST(RequestedRowTest, DestinationsOutsideTheSlotsAreDropped) {
  Slots slots;
  Channel channel;
  channel.Send(WorkRequest{}, Destinations({At("inside", DType::kU8, Shape{64}, 192),
                                            At("past_end", DType::kU8, Shape{65}, 192),
                                            At("beyond", DType::kU8, Shape{1}, 4096)}));
  RequestedRow row(slots.channel());
  WorkRequest request;
  ASSERT_TRUE(row.Read(channel.child, &request));
  EXPECT_NE(row.Find("inside", DType::kU8, Shape{64}), nullptr);
  EXPECT_EQ(row.Find("past_end", DType::kU8, Shape{65}), nullptr);
  EXPECT_EQ(row.Find("beyond", DType::kU8, Shape{1}), nullptr);
}

TEST(RequestedRowTest, WithoutSharedSlotsEveryFieldGoesThroughTheArena) {
  Channel channel;
  channel.Send(WorkRequest{}, Destinations({At("x", DType::kU8, Shape{1}, 0)}));
  RequestedRow row(WorkerChannel{});
  WorkRequest request;
  ASSERT_TRUE(row.Read(channel.child, &request));
  EXPECT_EQ(row.Find("x", DType::kU8, Shape{1}), nullptr);
  EXPECT_EQ(row.OffsetOf(&request), -1);
}

TEST(RequestedRowTest, EndOfFileIsFalseAndAMalformedRequestAnError) {
  Slots slots;
  {
    Channel channel;
    channel.CloseParent();
    RequestedRow row(slots.channel());
    WorkRequest request;
    EXPECT_FALSE(row.Read(channel.child, &request));
  }
  {
    Channel channel;
    channel.Send(WorkRequest{}, std::string("\xff\xff\xff\xff garbage", 12));
    RequestedRow row(slots.channel());
    WorkRequest request;
    try {
      row.Read(channel.child, &request);
      FAIL() << "a malformed request was read";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("malformed sample request"));
    }
  }
  {
    // A request cut short: its body never comes.
    Channel channel;
    WorkRequest request;
    request.destinations_bytes = 100;
    ASSERT_TRUE(WriteAll(channel.parent, &request, sizeof(request)));
    channel.CloseParent();
    RequestedRow row(slots.channel());
    EXPECT_FALSE(row.Read(channel.child, &request));
  }
}

TEST(RequestedRowTest, SeveralSamplesInOneRequestEachWithItsRow) {
  Slots slots;
  Channel channel;
  std::string body;
  EncodeRequestedSample(10, 0, Destinations({At("x", DType::kF32, Shape{2}, 0)}), &body);
  EncodeRequestedSample(11, 1, Destinations({At("x", DType::kF32, Shape{2}, 64)}), &body);
  channel.SendSamples(2, body);
  RequestedRow row(slots.channel());
  WorkRequest request;
  ASSERT_TRUE(row.Read(channel.child, &request));
  ASSERT_EQ(row.num_samples(), 2u);
  EXPECT_EQ(row.Select(1).index, 11);
  EXPECT_EQ(row.Find("x", DType::kF32, Shape{2}), slots.memory + 64);
  EXPECT_EQ(row.Select(0).index, 10);
  EXPECT_EQ(row.Find("x", DType::kF32, Shape{2}), slots.memory);
}

TEST(RequestedRowTest, ASamplesRequestWithTheWrongCountIsAnError) {
  Slots slots;
  Channel channel;
  std::string body;
  EncodeRequestedSample(10, 0, "", &body);
  channel.SendSamples(3, body);  // but one sample follows
  RequestedRow row(slots.channel());
  WorkRequest request;
  EXPECT_THROW(row.Read(channel.child, &request), Error);
  EXPECT_EQ(row.num_samples(), 0u);
}

TEST(RequestedRowTest, ABoundSampleWritesIntoItsRowAndRefusesAnotherShape) {
  Slots slots;
  Channel channel;
  channel.Send(WorkRequest{}, Destinations({At("x", DType::kI32, Shape{2}, 64),
                                            At("soft", DType::kU8, Shape{8}, 128, true)}));
  RequestedRow row(slots.channel());
  WorkRequest request;
  ASSERT_TRUE(row.Read(channel.child, &request));
  Sample sample;
  row.Bind(sample);
  Tensor x = sample.Allocate("x", DType::kI32, Shape{2});
  EXPECT_EQ(static_cast<void*>(x.data<int32_t>()), static_cast<void*>(slots.memory + 64));
  EXPECT_EQ(row.OffsetOf(x.data<int32_t>()), 64);
  // A soft field of another shape goes to the sample's own storage.
  Tensor soft = sample.Allocate("soft", DType::kU8, Shape{9});
  EXPECT_EQ(row.OffsetOf(soft.data<uint8_t>()), -1);
  // A declared field of another shape fails as "schema".
  try {
    sample.Allocate("x", DType::kI32, Shape{3});
    FAIL() << "a field of another shape was written into the row";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kSchema);
  }
}

// Reads one reply from `fd`: its header, body and payload.
struct ChildReply {
  ReplyHeader header{};
  std::string body;
  std::string payload;
};
ChildReply ReadReply(int fd) {
  ChildReply reply;
  EXPECT_TRUE(ReadAll(fd, &reply.header, sizeof(reply.header)));
  reply.body.resize(reply.header.body_bytes);
  reply.payload.resize(reply.header.payload_bytes);
  if (!reply.body.empty()) {
    EXPECT_TRUE(ReadAll(fd, reply.body.data(), reply.body.size()));
  }
  if (!reply.payload.empty()) {
    EXPECT_TRUE(ReadAll(fd, reply.payload.data(), reply.payload.size()));
  }
  return reply;
}

TEST(ReplyStagingTest, WithoutAnArenaTheFieldsFollowTheReply) {
  Channel channel;
  ReplyStaging staging(-1);
  SampleReply reply;
  char* a = staging.AddField("a", DType::kU8, Shape{3}, &reply);
  std::memcpy(a, "abc", 3);
  char* b = staging.AddField("b", DType::kI32, Shape{1}, &reply);
  const int32_t value = 77;
  std::memcpy(b, &value, sizeof(value));
  ASSERT_EQ(reply.fields.size(), 2u);
  EXPECT_EQ(reply.fields[0].offset, 0u);
  EXPECT_EQ(reply.fields[1].offset % 64, 0u) << "fields start on 64-byte boundaries";
  EXPECT_EQ(reply.fields[1].bytes, 4u);
  ASSERT_TRUE(staging.Send(channel.child, &reply));
  const ChildReply got = ReadReply(channel.parent);
  EXPECT_EQ(got.header.kind, static_cast<uint32_t>(ReplyKind::kSample));
  SampleReply decoded;
  ASSERT_TRUE(DecodeSampleReply(got.body.data(), got.body.size(), &decoded));
  EXPECT_EQ(decoded.arena_bytes, 0u);
  ASSERT_EQ(decoded.fields.size(), 2u);
  EXPECT_EQ(decoded.fields[1].name, "b");
  EXPECT_EQ(got.payload.substr(0, 3), "abc");
  int32_t read_back = 0;
  std::memcpy(&read_back, got.payload.data() + decoded.fields[1].offset, sizeof(read_back));
  EXPECT_EQ(read_back, 77);
}

TEST(ReplyStagingTest, APrivateBufferStartsOverForEachSampleAndGrows) {
  ReplyStaging staging(-1);
  const size_t first = staging.Take(10);
  staging.NextSample();
  EXPECT_EQ(staging.Take(10), first) << "the previous sample went with its reply";
  const size_t big = staging.Take(size_t{3} << 20);
  staging.data()[big + (size_t{3} << 20) - 1] = 'z';  // the buffer grew to hold it
  staging.Clear();
  EXPECT_EQ(staging.Take(1), 0u);
}

TEST(ReplyStagingTest, AnArenaKeepsEverySampleUntilTheReplyIsRead) {
  SharedArena arena = SharedArena::Create("worker_child_test", 1 << 16);
  ReplyStaging staging(arena.fd());
  SampleReply reply;
  char* a = staging.AddField("a", DType::kU8, Shape{5}, &reply);
  std::memcpy(a, "hello", 5);
  staging.NextSample();  // shared: kept
  SampleReply second;
  staging.AddField("b", DType::kU8, Shape{5}, &second);
  EXPECT_GT(second.fields[0].offset, reply.fields[0].offset);
  // The parent sees the bytes through its own mapping of the arena.
  EXPECT_EQ(std::string(arena.data() + reply.fields[0].offset, 5), "hello");
  Channel channel;
  ASSERT_TRUE(staging.Send(channel.child, &reply));
  const ChildReply got = ReadReply(channel.parent);
  EXPECT_TRUE(got.payload.empty()) << "nothing follows the reply: the bytes are shared";
  SampleReply decoded;
  ASSERT_TRUE(DecodeSampleReply(got.body.data(), got.body.size(), &decoded));
  EXPECT_GE(decoded.arena_bytes, size_t{1} << 16);
}

TEST(ReplyStagingTest, InPlaceFieldsAreRecordedWithTheirOffset) {
  SampleReply reply;
  ReplyStaging::AddInPlace("x", DType::kF32, Shape{4}, 128, &reply);
  ASSERT_EQ(reply.fields.size(), 1u);
  EXPECT_TRUE(reply.fields[0].in_place);
  EXPECT_EQ(reply.fields[0].offset, 128u);
  EXPECT_EQ(reply.fields[0].bytes, 16u);
}

TEST(ReplyStagingTest, RepliesToSeveralSamplesAreGatheredInOneMessageStream) {
  ReplyStaging staging(-1);
  std::string out;
  SampleReply reply;
  std::memcpy(staging.AddField("a", DType::kU8, Shape{2}, &reply), "ok", 2);
  staging.Append(&out, &reply);
  AppendErrorReply(&out, ExceptionReply("boom", "ValueError"));
  Channel channel;
  ASSERT_TRUE(WriteAll(channel.child, out.data(), out.size()));
  const ChildReply sample = ReadReply(channel.parent);
  EXPECT_EQ(sample.header.kind, static_cast<uint32_t>(ReplyKind::kSample));
  EXPECT_EQ(sample.payload.substr(0, 2), "ok");
  const ChildReply error = ReadReply(channel.parent);
  ASSERT_EQ(error.header.kind, static_cast<uint32_t>(ReplyKind::kError));
  ErrorReply decoded;
  ASSERT_TRUE(DecodeErrorReply(error.body.data(), error.body.size(), &decoded));
  EXPECT_EQ(decoded.message, "boom");
}

TEST(ReplyStagingTest, SendErrorReplyReachesTheParent) {
  Channel channel;
  SendErrorReply(channel.child, WorkerInitReply("no GPU"));
  const ChildReply got = ReadReply(channel.parent);
  ASSERT_EQ(got.header.kind, static_cast<uint32_t>(ReplyKind::kError));
  ErrorReply decoded;
  ASSERT_TRUE(DecodeErrorReply(got.body.data(), got.body.size(), &decoded));
  EXPECT_EQ(decoded.message, "no GPU");
}

// The exit status of child `pid`, or -1 if a signal ended it.
int ChildExitStatus(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(EnterWorkerChildTest, TheChildKeepsItsOwnDescriptorsOnlyAndLeavesCtrlCToTheParent) {
  Channel mine;
  Channel other;  // another worker's socket, registered as every loader's is
  RegisterInheritedFd(other.parent);
  RegisterInheritedFd(mine.child);
  WorkerChannel channel;
  channel.parent_pid = ::getpid();
  channel.socket_fd = mine.child;
  const pid_t pid = ::fork();
  if (pid == 0) {
    EnterWorkerChild(channel);
    struct sigaction action {};
    ::sigaction(SIGINT, nullptr, &action);
    const bool ignores_sigint = action.sa_handler == SIG_IGN;
    const bool kept = ::fcntl(mine.child, F_GETFD) != -1;
    const bool closed = ::fcntl(other.parent, F_GETFD) == -1;
    _exit(ignores_sigint && kept && closed ? 0 : 1);
  }
  EXPECT_EQ(ChildExitStatus(pid), 0);
  UnregisterInheritedFd(other.parent);
  UnregisterInheritedFd(mine.child);
}

TEST(EnterWorkerChildTest, AChildWhoseParentIsGoneLeavesAtOnce) {
  WorkerChannel channel;
  channel.parent_pid = 1;  // not this child's parent: as if the parent died before
  const pid_t pid = ::fork();
  if (pid == 0) {
    EnterWorkerChild(channel);
    _exit(3);  // not reached
  }
  EXPECT_EQ(ChildExitStatus(pid), 0);
}

}  // namespace
}  // namespace feedline::internal
