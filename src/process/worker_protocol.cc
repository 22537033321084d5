#include "src/process/worker_protocol.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace feedline::internal {
namespace {

// Little-endian host order throughout: both ends are the same program on the
// same machine.
class Writer {
 public:
  Writer() = default;
  explicit Writer(std::string out) : out_(std::move(out)) {}
  template <typename T>
  void Put(T value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const char* data, size_t size) : p_(data), end_(data + size) {}
  template <typename T>
  bool Get(T* value) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) return false;
    std::memcpy(value, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n;
    if (!Get(&n) || static_cast<size_t>(end_ - p_) < n) return false;
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

std::string EncodeSampleReply(const SampleReply& reply) {
  Writer w;
  w.Put<uint64_t>(reply.arena_bytes);
  for (int64_t ns : reply.stage_ns) w.Put<int64_t>(ns);
  w.Put<int64_t>(reply.images_decoded);
  w.Put<uint32_t>(static_cast<uint32_t>(reply.fields.size()));
  for (const FieldMeta& f : reply.fields) {
    w.PutString(f.name);
    w.Put<uint8_t>(static_cast<uint8_t>(f.dtype));
    w.Put<uint8_t>(static_cast<uint8_t>(f.shape.rank()));
    for (int64_t d : f.shape) w.Put<int64_t>(d);
    w.Put<uint64_t>(f.offset);
    w.Put<uint64_t>(f.bytes);
    w.Put<uint8_t>(f.in_place ? 1 : 0);
  }
  std::string schema;
  EncodeSampleSchema(reply.schema, &schema);
  w.PutString(schema);
  return w.Take();
}

void EncodeSampleSchema(const SampleSchema& schema, std::string* out) {
  Writer w(std::move(*out));
  w.Put<uint32_t>(static_cast<uint32_t>(schema.size()));
  for (size_t i = 0; i < schema.size(); ++i) {
    const SchemaNode& node = schema.node(i);
    w.Put<uint8_t>(static_cast<uint8_t>(node.kind));
    w.Put<uint8_t>(static_cast<uint8_t>(node.leaf_type));
    w.Put<uint8_t>(static_cast<uint8_t>(node.dtype));
    w.PutString(node.key);
    if (node.is_leaf()) continue;
    w.Put<uint32_t>(static_cast<uint32_t>(schema.Children(i).size()));
    w.PutString(node.type.module);
    w.PutString(node.type.qualname);
    w.Put<uint8_t>(node.type.locatable ? 1 : 0);
  }
  *out = w.Take();
}

bool DecodeSampleSchema(const char* data, size_t size, SampleSchema* schema) {
  Reader r(data, size);
  *schema = SampleSchema();
  uint32_t count;
  // Each node takes at least 7 bytes: a count beyond that is damage.
  if (!r.Get(&count) || count > r.left() / 7) return false;
  // The open containers, innermost last, and how many children each still has.
  struct Open {
    size_t index;
    uint32_t children_left;
  };
  std::vector<Open> open;
  for (uint32_t n = 0; n < count; ++n) {
    while (!open.empty() && open.back().children_left == 0) {
      schema->CloseContainer(open.back().index);
      open.pop_back();
    }
    // One root: a node after the root's subtree is damage.
    if (n > 0 && open.empty()) return false;
    const size_t parent = open.empty() ? SampleSchema::kNoParent : open.back().index;
    uint8_t kind, leaf_type, dtype;
    std::string key;
    if (!r.Get(&kind) || !r.Get(&leaf_type) || !r.Get(&dtype) || !r.GetString(&key)) return false;
    if (kind > static_cast<uint8_t>(kLastSchemaKind) ||
        leaf_type > static_cast<uint8_t>(kLastLeafType) ||
        dtype > static_cast<uint8_t>(kLastDType)) {
      return false;
    }
    if (!open.empty()) --open.back().children_left;
    const auto schema_kind = static_cast<SchemaKind>(kind);
    if (schema_kind < SchemaKind::kTuple) {
      schema->AddLeaf(parent, schema_kind, static_cast<LeafType>(leaf_type),
                      static_cast<DType>(dtype), std::move(key));
      continue;
    }
    uint32_t children;
    SchemaType type;
    uint8_t locatable;
    if (!r.Get(&children) || !r.GetString(&type.module) || !r.GetString(&type.qualname) ||
        !r.Get(&locatable) || children > count - n - 1) {
      return false;
    }
    type.locatable = locatable != 0;
    open.push_back({schema->OpenContainer(parent, schema_kind, std::move(key), std::move(type)),
                    children});
  }
  // Every container got the children it announced.
  for (; !open.empty(); open.pop_back()) {
    if (open.back().children_left != 0) return false;
    schema->CloseContainer(open.back().index);
  }
  return r.done();
}

namespace {

void PutShape(Writer& w, DType dtype, const Shape& shape) {
  w.Put<uint8_t>(static_cast<uint8_t>(dtype));
  w.Put<uint8_t>(static_cast<uint8_t>(shape.rank()));
  for (int64_t d : shape) w.Put<int64_t>(d);
}

bool GetShape(Reader& r, DType* dtype, Shape* shape) {
  uint8_t d, rank;
  if (!r.Get(&d) || !r.Get(&rank)) return false;
  if (rank > Shape::kMaxRank || d > static_cast<uint8_t>(kLastDType)) return false;
  *dtype = static_cast<DType>(d);
  *shape = Shape();
  for (uint8_t i = 0; i < rank; ++i) {
    int64_t extent;
    if (!r.Get(&extent) || extent < 0) return false;
    shape->push_back(extent);
  }
  return true;
}

}  // namespace

void EncodeDestinations(const std::vector<RowDestination>& destinations, std::string* out) {
  Writer w(std::move(*out));
  w.Put<uint32_t>(static_cast<uint32_t>(destinations.size()));
  for (const RowDestination& d : destinations) {
    w.PutString(d.name);
    PutShape(w, d.dtype, d.shape);
    w.Put<uint64_t>(d.offset);
    w.Put<uint8_t>(d.soft ? 1 : 0);
  }
  *out = w.Take();
}

bool DecodeDestinations(const char* data, size_t size, std::vector<RowDestination>* destinations) {
  Reader r(data, size);
  uint32_t n;
  if (!r.Get(&n) || n > size) return false;
  destinations->resize(n);
  for (RowDestination& d : *destinations) {
    uint8_t soft;
    if (!r.GetString(&d.name) || !GetShape(r, &d.dtype, &d.shape) || !r.Get(&d.offset) ||
        !r.Get(&soft)) {
      return false;
    }
    d.soft = soft != 0;
  }
  return r.done();
}

void EncodeRequestedSample(int64_t index, int64_t context_index,
                           const std::string& encoded_destinations, std::string* out) {
  Writer w(std::move(*out));
  w.Put<int64_t>(index);
  w.Put<int64_t>(context_index);
  w.PutString(encoded_destinations);
  *out = w.Take();
}

bool DecodeRequestedSamples(const char* data, size_t size, uint64_t count,
                            std::vector<RequestedSample>* samples) {
  Reader r(data, size);
  // Each sample takes at least 20 bytes: a count beyond that is damage.
  if (count > size / 20) return false;
  samples->resize(count);
  std::string destinations;
  for (RequestedSample& s : *samples) {
    if (!r.Get(&s.index) || !r.Get(&s.context_index) || !r.GetString(&destinations)) return false;
    s.destinations.clear();
    if (!destinations.empty() &&
        !DecodeDestinations(destinations.data(), destinations.size(), &s.destinations)) {
      return false;
    }
  }
  return r.done();
}

bool DecodeSampleReply(const char* data, size_t size, SampleReply* reply) {
  Reader r(data, size);
  uint32_t n;
  if (!r.Get(&reply->arena_bytes)) return false;
  for (int64_t& ns : reply->stage_ns) {
    if (!r.Get(&ns)) return false;
  }
  if (!r.Get(&reply->images_decoded)) return false;
  // Each field takes more than a byte: a count beyond the bytes is damage,
  // refused before the fields are made (a count of 2^32-1 would ask for
  // hundreds of GB; fuzz/worker_protocol_fuzzer.cc runs with a 256 MB
  // allocation limit).
  if (!r.Get(&n) || n > size) return false;
  reply->fields.resize(n);
  for (FieldMeta& f : reply->fields) {
    uint8_t dtype, rank;
    if (!r.GetString(&f.name) || !r.Get(&dtype) || !r.Get(&rank)) return false;
    if (rank > Shape::kMaxRank || dtype > static_cast<uint8_t>(kLastDType)) return false;
    f.dtype = static_cast<DType>(dtype);
    f.shape = Shape();
    for (uint8_t i = 0; i < rank; ++i) {
      int64_t d;
      if (!r.Get(&d) || d < 0) return false;
      f.shape.push_back(d);
    }
    uint8_t in_place;
    if (!r.Get(&f.offset) || !r.Get(&f.bytes) || !r.Get(&in_place)) return false;
    f.in_place = in_place != 0;
  }
  std::string schema;
  if (!r.GetString(&schema)) return false;
  // Bytes equal to the last decoded schema's decode to the same schema: kept.
  reply->schema_repeated = !reply->schema_bytes.empty() && schema == reply->schema_bytes;
  if (!reply->schema_repeated) {
    reply->schema_bytes.clear();  // until these bytes decoded
    if (!DecodeSampleSchema(schema.data(), schema.size(), &reply->schema)) return false;
    reply->schema_bytes = std::move(schema);
  }
  return r.done();
}

std::string EncodeErrorReply(const ErrorReply& reply) {
  Writer w;
  w.Put<uint8_t>(static_cast<uint8_t>(reply.cause));
  w.Put<uint8_t>(static_cast<uint8_t>(reply.kind));
  w.PutString(reply.message);
  w.PutString(reply.source);
  w.PutString(reply.origin.exception_type);
  return w.Take();
}

bool DecodeErrorReply(const char* data, size_t size, ErrorReply* reply) {
  Reader r(data, size);
  uint8_t cause = 0;
  uint8_t kind = 0;
  if (!r.Get(&cause) || cause > static_cast<uint8_t>(ErrorCause::kInterrupt)) return false;
  if (!r.Get(&kind) || kind >= kFailureKindCount) return false;
  reply->cause = static_cast<ErrorCause>(cause);
  reply->kind = static_cast<FailureKind>(kind);
  return r.GetString(&reply->message) && r.GetString(&reply->source) &&
         r.GetString(&reply->origin.exception_type) && r.done();
}

namespace {

// Moves all `size` bytes with `step` (send or recv), retrying on EINTR and
// short transfers. False on an error or when `step` returns 0 (end of file).
template <typename Step>
bool TransferAll(char* p, size_t size, Step step) {
  while (size > 0) {
    const ssize_t n = step(p, size);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool WriteAll(int fd, const void* data, size_t size) {
  return TransferAll(static_cast<char*>(const_cast<void*>(data)), size,
                     [fd](char* p, size_t n) { return ::send(fd, p, n, MSG_NOSIGNAL); });
}

bool ReadAll(int fd, void* data, size_t size) {
  return TransferAll(static_cast<char*>(data), size,
                     [fd](char* p, size_t n) { return ::recv(fd, p, n, 0); });
}

bool WriteMessage(int fd, ReplyKind kind, const std::string& body, const void* payload,
                  size_t payload_bytes) {
  ReplyHeader header{static_cast<uint32_t>(kind), static_cast<uint32_t>(body.size()),
                     payload_bytes};
  // Header, body and payload in one sendmsg: the reader wakes once for a
  // small reply instead of once per part.
  iovec parts[3] = {{&header, sizeof(header)},
                    {const_cast<char*>(body.data()), body.size()},
                    {const_cast<void*>(payload), payload_bytes}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = payload_bytes > 0 ? 3 : 2;
  ssize_t sent;
  do {
    sent = ::sendmsg(fd, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return false;
  // A large payload goes out in several calls: finish what sendmsg left.
  size_t done = static_cast<size_t>(sent);
  for (const iovec& part : parts) {
    if (done >= part.iov_len) {
      done -= part.iov_len;
      continue;
    }
    if (!WriteAll(fd, static_cast<const char*>(part.iov_base) + done, part.iov_len - done)) {
      return false;
    }
    done = 0;
  }
  return true;
}

void AppendMessage(std::string* out, ReplyKind kind, const std::string& body, const void* payload,
                   size_t payload_bytes) {
  const ReplyHeader header{static_cast<uint32_t>(kind), static_cast<uint32_t>(body.size()),
                           payload_bytes};
  out->append(reinterpret_cast<const char*>(&header), sizeof(header));
  out->append(body);
  if (payload_bytes > 0) out->append(static_cast<const char*>(payload), payload_bytes);
}

}  // namespace feedline::internal
