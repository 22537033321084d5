// The messages between a loader thread and its worker process, over a Unix
// stream socket. Only indices and small metadata cross: a sample's array bytes
// are in the worker's shared arena (or, without shared memory, follow the
// metadata as one payload). Every message is a ReplyHeader followed by
// `body_bytes` of body and `payload_bytes` of payload; requests are fixed-size.
//
// Thread safety: free functions on caller-owned values; a socket is used by
// one thread at a time.
#ifndef FEEDLINE_PYTHON_WORKER_PROTOCOL_H_
#define FEEDLINE_PYTHON_WORKER_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "feedline/tensor.h"

namespace feedline::python {

// Parent -> worker: load sample `index` of `epoch` (24 bytes).
struct WorkRequest {
  int64_t index;
  int64_t epoch;
  uint64_t seed;
};

enum class ReplyKind : uint32_t {
  kReady = 1,   // the worker started (worker_init_fn done); no body
  kSample = 2,  // body: SampleReply
  kError = 3,   // body: ErrorReply
};

struct ReplyHeader {
  uint32_t kind;
  uint32_t body_bytes;
  uint64_t payload_bytes;
};

// One field of a sample: where its bytes are in the arena (or the payload).
struct FieldMeta {
  std::string name;
  DType dtype = DType::kU8;
  Shape shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct SampleReply {
  int layout = 0;            // Structure::Kind of the sample
  uint64_t arena_bytes = 0;  // the arena's size after this sample (it may have grown)
  std::vector<FieldMeta> fields;
};

struct ErrorReply {
  std::string reason;  // SampleError reason: "exception", "type", "memory", ...
  std::string message;
};

// The reason of an ErrorReply for a Python exception that is not an
// Exception, followed by its type name ("interrupt:KeyboardInterrupt"): the
// parent raises it again as itself, never as a sample error.
inline constexpr char kInterruptReason[] = "interrupt:";

std::string EncodeSampleReply(const SampleReply& reply);
// False if `size` bytes at `data` are not a well-formed SampleReply.
bool DecodeSampleReply(const char* data, size_t size, SampleReply* reply);

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

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_WORKER_PROTOCOL_H_
