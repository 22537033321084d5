// The child's side of a worker process: what a forked worker is given
// (WorkerChannel), entering the child after the fork, reading the requested
// batch row, staging a reply's arrays in the shared arena (or a buffer that
// follows the reply through the socket) and sending replies. The one child
// loop (child_loop.h) uses them for every WorkerTask.
//
// Thread safety: the child is single-threaded; one staging per child.
#ifndef FEEDLINE_SRC_PROCESS_WORKER_CHILD_H_
#define FEEDLINE_SRC_PROCESS_WORKER_CHILD_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/process/worker_protocol.h"
#include "feedline/sample.h"

namespace feedline::internal {

// What a forked worker process is given.
struct WorkerChannel {
  int worker_id = 0;
  int num_workers = 1;
  uint64_t seed = 0;   // the loader's seed
  pid_t parent_pid = 0;
  int socket_fd = -1;  // the child's end
  int arena_fd = -1;   // -1: samples go through the socket
  // The batch slots' shared memory, inherited through the fork at the same
  // address; null without shared memory.
  std::byte* slots_base = nullptr;
  size_t slots_bytes = 0;
};

// The first thing a child does: die with the parent (PR_SET_PDEATHSIG; an
// idle child also sees end of file on its socket), leave Ctrl-C to the
// parent (SIGINT ignored), close every other worker's descriptors and keep
// freed memory in the heap for the next sample (worker_heap.h).
// _exits if the parent is already gone.
void EnterWorkerChild(const WorkerChannel& channel);

// The batch row a sample request names, in the child: where each of its
// fields goes in the shared slots this process inherited.
class RequestedRow {
 public:
  explicit RequestedRow(const WorkerChannel& channel)
      : base_(channel.slots_base), bytes_(channel.slots_bytes) {}

  // Reads the next request and the row it names (for kSamples, the samples
  // it lists: Select picks each one's row). False at end of file.
  bool Read(int fd, WorkRequest* request);
  // The samples of the last kSamples request.
  size_t num_samples() const { return samples_.size(); }
  // The batch the last request's samples belong to (SampleContext::batch).
  std::span<const int64_t> batch() const { return batch_; }
  // Makes sample `i` of the last kSamples request the requested row.
  const RequestedSample& Select(size_t i);
  // Where field `name` goes if the sample produces `dtype` and `shape`
  // (the row's memory), else nullptr (the arena).
  std::byte* Find(const std::string& name, DType dtype, const Shape& shape) const;
  // Binds `sample` to the row, so that Get writes there as it would on a
  // worker thread; a declared (not soft) field of another dtype or shape
  // fails as "schema" there too.
  void Bind(Sample& sample);
  // The offset in the slots of memory inside them, or -1.
  int64_t OffsetOf(const void* p) const;
  // The memory of `bytes` at `offset` in the slots, or nullptr where that
  // is not inside them (no slots here, or a damaged request).
  std::byte* InSlots(uint64_t offset, uint64_t bytes) const;

 private:
  std::byte* base_;
  size_t bytes_;
  std::string body_;
  // Drops the destinations outside the slots (they go through the arena).
  void KeepInsideSlots(std::vector<RowDestination>* row) const;

  std::vector<RowDestination> row_;
  std::vector<RequestedSample> samples_;
  std::vector<int64_t> batch_;
  std::vector<std::string> bound_;  // names `sample` was bound to last
};

// Where the child puts one sample's arrays before replying.
class ReplyStaging {
 public:
  // Attaches the arena `arena_fd`, or uses a private buffer when it is -1.
  explicit ReplyStaging(int arena_fd);
  ~ReplyStaging();
  ReplyStaging(const ReplyStaging&) = delete;
  ReplyStaging& operator=(const ReplyStaging&) = delete;

  // Forgets the previous sample.
  void Clear() { used_ = 0; }
  // Before each sample of a kSamples request (cleared once before the
  // first): the arena keeps every sample's fields until the one reply is
  // read; a private buffer follows each reply, so it starts over.
  void NextSample() {
    if (!shared_) used_ = 0;
  }
  // Room for `bytes` more bytes at the returned offset, which stays valid
  // (the memory may move when it grows: keep offsets, not pointers). Throws
  // SampleError(FailureKind::kMemory) if the shared arena cannot grow.
  size_t Take(size_t bytes);
  // Takes room for a field and records it in `reply`; returns its memory.
  char* AddField(const std::string& name, DType dtype, const Shape& shape, SampleReply* reply);
  // Records a field written in place, at `offset` in the shared slots.
  static void AddInPlace(const std::string& name, DType dtype, const Shape& shape,
                         uint64_t offset, SampleReply* reply);

  // The staged bytes (offsets from Take count from here).
  char* data();

  // Sends `reply` for the staged fields (their bytes follow it when the
  // arena is not shared). False if the parent is gone.
  bool Send(int fd, SampleReply* reply);
  // The same reply appended to `*out`, for a kSamples request.
  void Append(std::string* out, SampleReply* reply);

 private:
  struct Arena;  // the library's shared arena, attached to arena_fd

  bool shared_ = false;
  std::unique_ptr<Arena> arena_;  // null when not shared
  std::vector<char> buffer_;
  size_t used_ = 0;
};

// Sends an error reply; _exits if the parent is gone.
void SendErrorReply(int fd, const ErrorReply& error);
// The same reply appended to `*out`, for a kSamples request.
void AppendErrorReply(std::string* out, const ErrorReply& error);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_CHILD_H_
