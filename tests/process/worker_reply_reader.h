// The parent's side of one reply, for tests that play the parent of a
// forked worker on the other end of its socket (native_worker_test.cc,
// child_loop_test.cc).
#ifndef FEEDLINE_TESTS_PROCESS_WORKER_REPLY_READER_H_
#define FEEDLINE_TESTS_PROCESS_WORKER_REPLY_READER_H_

#include <gtest/gtest.h>

#include <string>

#include "src/process/worker_protocol.h"

namespace feedline::internal {

// One reply read from the child: its kind, body and payload.
struct WorkerReply {
  ReplyKind kind{};
  std::string body;
  std::string payload;
};

// Reads the next reply from `fd`; a test failure if the child closed it.
inline WorkerReply ReadWorkerReply(int fd) {
  WorkerReply reply;
  ReplyHeader header{};
  if (!ReadAll(fd, &header, sizeof(header))) {
    ADD_FAILURE() << "the worker closed its socket";
    return reply;
  }
  reply.kind = static_cast<ReplyKind>(header.kind);
  reply.body.resize(header.body_bytes);
  reply.payload.resize(header.payload_bytes);
  if (!reply.body.empty()) EXPECT_TRUE(ReadAll(fd, reply.body.data(), reply.body.size()));
  if (!reply.payload.empty()) EXPECT_TRUE(ReadAll(fd, reply.payload.data(), reply.payload.size()));
  return reply;
}

}  // namespace feedline::internal

#endif  // FEEDLINE_TESTS_PROCESS_WORKER_REPLY_READER_H_
