// A worker process forked to run a program through the library's child
// loop, and the parent's side of its socket, for tests that play the parent
// (native_worker_test.cc, child_loop_test.cc).
#ifndef FEEDLINE_TESTS_PROCESS_FORKED_WORKER_H_
#define FEEDLINE_TESTS_PROCESS_FORKED_WORKER_H_

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "feedline/error.h"
#include "feedline/extension/worker_program.h"
#include "src/process/child_loop.h"
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

// A child running `program`, and the parent's end of its socket.
class ForkedWorker {
 public:
  explicit ForkedWorker(extension::WorkerProgram& program, int worker_id = 0) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) throw Error("socketpair failed");
    WorkerChannel channel;
    channel.worker_id = worker_id;
    channel.num_workers = 2;
    channel.parent_pid = ::getpid();
    channel.socket_fd = fds[1];
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      RunWorkerChild(channel, program);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~ForkedWorker() {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) ExitStatus();
  }

  WorkerReply Read() { return ReadWorkerReply(fd_); }
  void Send(RequestKind kind, int64_t index, int64_t epoch = 0, const std::string& body = {}) {
    WorkRequest request;
    request.kind = static_cast<uint32_t>(kind);
    request.index = index;
    request.epoch = epoch;
    request.destinations_bytes = static_cast<uint32_t>(body.size());
    ASSERT_TRUE(WriteAll(fd_, &request, sizeof(request)));
    if (!body.empty()) ASSERT_TRUE(WriteAll(fd_, body.data(), body.size()));
  }
  // Closes the socket and returns the child's exit status (-1: a signal).
  int ExitStatus() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_TESTS_PROCESS_FORKED_WORKER_H_
