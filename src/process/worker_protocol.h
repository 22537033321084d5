// The messages between a loader thread and its worker process, over the
// channel between them (a Unix stream socket today), the same for every
// WorkerTask (feedline/extension/worker_task.h). Private to src/process:
// the parent's side is ProcessWorkers, the child's the one child loop
// (child_loop.h); a task never sees a message. Parent and child are always
// the same build, so no message carries a version.
//
// Only indices and small metadata cross: a sample's array bytes are in the
// worker's shared arena (or, without shared memory, follow the metadata as
// one payload), or already in the batch row the request named: with shared
// memory the batch slots are mapped in every worker process, and a sample
// request lists where its row's fields go (RowDestination, by offset in the
// slots' reservation), so the worker writes them there. Every reply is a
// ReplyHeader followed by `body_bytes` of body and `payload_bytes` of
// payload; a request is a WorkRequest followed by `destinations_bytes` of
// encoded RowDestinations.
//
// Thread safety: free functions on caller-owned values; a socket is used by
// one thread at a time.
#ifndef FEEDLINE_SRC_PROCESS_WORKER_PROTOCOL_H_
#define FEEDLINE_SRC_PROCESS_WORKER_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/extension/worker_failure.h"
#include "feedline/failure_kind.h"
#include "feedline/sample_schema.h"
#include "feedline/tensor.h"

namespace feedline::internal {

using extension::ErrorCause;
using extension::ErrorReply;
using extension::ExceptionReply;
using extension::InterruptReply;
using extension::kBadAllocType;
using extension::SampleErrorReply;
using extension::WorkerInitReply;

enum class RequestKind : uint32_t {
  kSample = 1,  // map-style: load sample `index` (context index `context_index`) of `epoch`
  kOpen = 2,    // iterable: start a new pass over the worker's split for `epoch`
  kNext = 3,    // iterable: the next item of the pass
  // map-style: load `index` samples of `epoch` in one round trip; the body
  // (destinations_bytes) lists them (EncodeRequestedRow each, in order), and
  // the worker answers with one reply per sample, in order, in one write.
  kSamples = 4,
  // map-style, a program that keeps what it loaded (a Python collate_fn in
  // the worker): collate `index` of the samples this process replied with
  // last, named by the sequence numbers of their replies (0 for its first
  // sample reply, counted in both processes), listed in the body as
  // kSamples lists its samples (EncodeRequestedSample(seq, seq, "")). The
  // worker answers with one sample reply holding the batch, or kEnd when it
  // no longer holds one of them (the parent then collates itself). The
  // batch's fields go into the room the request names (`room_offset`,
  // `room_bytes`: a block of the shared slots the parent reads them in,
  // without a copy) as far as they fit, the rest into the arena.
  kCollate = 5,
  // kSamples, then, when every sample loaded, kCollate of all of them (the
  // replies this request makes) into the room it names: the request that
  // completes a batch asks for its collate in the same exchange. The worker
  // answers with the samples' replies and then one more: the batch, kEnd
  // when it did not collate (a sample failed, or the task keeps nothing),
  // or collate's error, all in one write.
  kSamplesThenCollate = 6,
};

// Parent -> worker (64 bytes, then the destinations, then `batch_rows`
// int64 indices: the SampleContext's batch). `seed`, `epoch` and
// `context_index` rebuild the SampleContext the engine gave the parent's
// thread, so a sample's Rng draws are the same as on a worker thread.
struct WorkRequest {
  uint32_t kind = static_cast<uint32_t>(RequestKind::kSample);
  uint32_t destinations_bytes = 0;  // EncodeDestinations of the row, after this
  int64_t index = 0;
  int64_t epoch = 0;
  uint64_t seed = 0;
  int64_t context_index = 0;
  // kCollate, kSamplesThenCollate: where in the shared slots the batch's
  // fields may go (none when room_bytes is 0).
  uint64_t room_offset = 0;
  uint64_t room_bytes = 0;
  uint64_t batch_rows = 0;
};

enum class ReplyKind : uint32_t {
  kReady = 1,   // the worker started (worker_init done) or opened its pass; no body
  kSample = 2,  // body: SampleReply
  kError = 3,   // body: ErrorReply
  kEnd = 4,     // iterable: the pass is over; no body
};

struct ReplyHeader {
  uint32_t kind;
  uint32_t body_bytes;
  uint64_t payload_bytes;
};

// Where one field of the requested row goes: the batch row, at `offset` in
// the shared slots, if the sample produces `dtype` and `shape` there. `soft`:
// another dtype or shape is not an error but goes to the arena (a learned
// layout); otherwise it is a SampleError(FailureKind::kSchema), as on a worker thread.
struct RowDestination {
  std::string name;
  DType dtype = DType::kU8;
  Shape shape;
  uint64_t offset = 0;
  bool soft = false;
};

// One field of a sample: where its bytes are in the arena (or the payload),
// or, `in_place`, at `offset` in the shared slots (its RowDestination).
struct FieldMeta {
  std::string name;
  DType dtype = DType::kU8;
  Shape shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool in_place = false;
};

struct SampleReply {
  uint64_t arena_bytes = 0;  // the arena's size after this sample (it may have grown)
  int64_t stage_ns[4] = {};  // the child's SampleContext stage times (read, decode, ...)
  int64_t images_decoded = 0;  // and the images it decoded
  std::vector<FieldMeta> fields;
  // How the fields nest, as the sample's tree (a Python dataset's sample:
  // the parent checks it against the first sample's and shapes batches by
  // it); empty for native samples, whose fields the dataset declared.
  SampleSchema schema;
  // Decoding only: the schema as it was encoded, and whether it is the same
  // bytes as the reply decoded into this object before. A worker sends the
  // same schema for sample after sample: a repeated one is not decoded
  // again (`schema` holds it already) and the parent need not check it
  // again (the library's ProcessWorkers::ReadSample).
  std::string schema_bytes;
  bool schema_repeated = false;
};

std::string EncodeSampleReply(const SampleReply& reply);
// False if `size` bytes at `data` are not a well-formed SampleReply. A
// schema whose bytes equal reply->schema_bytes (the reply decoded into
// `*reply` before) keeps reply->schema as it is, with schema_repeated set.
bool DecodeSampleReply(const char* data, size_t size, SampleReply* reply);

// A schema's nodes in preorder: their kind, leaf type, dtype and key, and a
// container's child count and class; paths are rebuilt on decoding. Appends
// to `*out`.
void EncodeSampleSchema(const SampleSchema& schema, std::string* out);
// False if the bytes are not one well-formed schema (an empty one included).
bool DecodeSampleSchema(const char* data, size_t size, SampleSchema* schema);
// Appends the encoded `destinations` to `*out`.
void EncodeDestinations(const std::vector<RowDestination>& destinations, std::string* out);
bool DecodeDestinations(const char* data, size_t size, std::vector<RowDestination>* destinations);

// One sample of a kSamples request: its index, its context's index and the
// row's destinations (the bytes EncodeDestinations made, possibly none).
struct RequestedSample {
  int64_t index = 0;
  int64_t context_index = 0;
  std::vector<RowDestination> destinations;
};
// Appends one sample of a kSamples request to `*out`.
void EncodeRequestedSample(int64_t index, int64_t context_index,
                           const std::string& encoded_destinations, std::string* out);
// False if the body of a kSamples request for `count` samples is malformed.
bool DecodeRequestedSamples(const char* data, size_t size, uint64_t count,
                            std::vector<RequestedSample>* samples);

std::string EncodeErrorReply(const ErrorReply& reply);
bool DecodeErrorReply(const char* data, size_t size, ErrorReply* reply);

// Writes all `size` bytes (retrying on EINTR and short writes; never raises
// SIGPIPE). False if the peer is gone.
bool WriteAll(int fd, const void* data, size_t size);
// Reads exactly `size` bytes. False at end of file (the peer died or closed)
// or on error.
bool ReadAll(int fd, void* data, size_t size);

// Header, body and payload in one call sequence.
bool WriteMessage(int fd, ReplyKind kind, const std::string& body, const void* payload = nullptr,
                  size_t payload_bytes = 0);
// The same message appended to `*out` (the replies to a kSamples request
// are gathered and written at once, so that the parent wakes once).
void AppendMessage(std::string* out, ReplyKind kind, const std::string& body,
                   const void* payload = nullptr, size_t payload_bytes = 0);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_WORKER_PROTOCOL_H_
