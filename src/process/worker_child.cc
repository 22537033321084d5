#include "src/process/worker_child.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>

#include "feedline/error.h"
#include "src/core/inherited_fds.h"
#include "src/core/sample_binder.h"
#include "src/process/process_spawner.h"
#include "src/process/shared_arena.h"
#include "src/process/worker_heap.h"

namespace feedline::internal {
namespace {


constexpr size_t kAlign = 64;
constexpr size_t kGrowStep = size_t{1} << 20;

size_t AlignUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

void EnterWorkerChild(const WorkerChannel& channel) {
  // Die with the parent: the signal covers a parent killed while this worker
  // is busy; an idle worker also sees end of file on its socket.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != channel.parent_pid) _exit(0);  // the parent died before prctl
  // Ctrl-C goes to the whole foreground process group; the parent handles it
  // and closes the workers.
  ::signal(SIGINT, SIG_IGN);
  CloseInheritedFdsExcept({channel.socket_fd, channel.arena_fd});
  KeepFreedMemoryForNextSample();
}

bool RequestedRow::Read(int fd, WorkRequest* request) {
  if (!ReadAll(fd, request, sizeof(*request))) return false;
  row_.clear();
  samples_.clear();
  // A batch is at most a slot's rows: more is damage.
  constexpr uint64_t kMaxBatchRows = uint64_t{1} << 24;
  if (request->batch_rows > kMaxBatchRows) {
    throw Error("the loader sent a malformed request: a batch of " +
                std::to_string(request->batch_rows) + " rows");
  }
  body_.resize(request->destinations_bytes);
  if (!ReadAll(fd, body_.data(), body_.size())) return false;
  batch_.resize(request->batch_rows);
  if (!ReadAll(fd, batch_.data(), batch_.size() * sizeof(int64_t))) return false;
  if (request->destinations_bytes == 0) return true;
  if (request->kind == static_cast<uint32_t>(RequestKind::kSamples) ||
      request->kind == static_cast<uint32_t>(RequestKind::kSamplesThenCollate) ||
      request->kind == static_cast<uint32_t>(RequestKind::kCollate)) {
    if (request->index < 0 ||
        !DecodeRequestedSamples(body_.data(), body_.size(), static_cast<uint64_t>(request->index),
                                &samples_)) {
      samples_.clear();
      throw Error("the loader sent a malformed request for several samples");
    }
    for (RequestedSample& s : samples_) KeepInsideSlots(&s.destinations);
    return true;
  }
  if (!DecodeDestinations(body_.data(), body_.size(), &row_)) {
    throw Error("the loader sent a malformed sample request");
  }
  KeepInsideSlots(&row_);
  return true;
}

void RequestedRow::KeepInsideSlots(std::vector<RowDestination>* row) const {
  // A destination outside the slots (no slots here, or a damaged request)
  // is not written: its field goes through the arena.
  std::erase_if(*row, [this](const RowDestination& d) {
    const uint64_t field_bytes = Tensor(d.dtype, d.shape, nullptr).bytes();
    return base_ == nullptr || d.offset > bytes_ || field_bytes > bytes_ - d.offset;
  });
}

const RequestedSample& RequestedRow::Select(size_t i) {
  row_ = samples_[i].destinations;
  return samples_[i];
}

std::byte* RequestedRow::Find(const std::string& name, DType dtype, const Shape& shape) const {
  for (const RowDestination& d : row_) {
    if (d.name == name) return d.dtype == dtype && d.shape == shape ? base_ + d.offset : nullptr;
  }
  return nullptr;
}

void RequestedRow::Bind(Sample& sample) {
  bool same = bound_.size() == row_.size();
  for (size_t i = 0; same && i < row_.size(); ++i) same = bound_[i] == row_[i].name;
  if (!same) {
    // Another set of fields: start over (Bind below updates names it knows).
    SampleBinder::Unbind(sample);
    bound_.clear();
    for (const RowDestination& d : row_) bound_.push_back(d.name);
  }
  for (const RowDestination& d : row_) {
    SampleBinder::Bind(sample, d.name, d.dtype, d.shape, base_ + d.offset, d.soft);
  }
}

std::byte* RequestedRow::InSlots(uint64_t offset, uint64_t bytes) const {
  if (base_ == nullptr || offset > bytes_ || bytes > bytes_ - offset) return nullptr;
  return base_ + offset;
}

int64_t RequestedRow::OffsetOf(const void* p) const {
  const auto* b = static_cast<const std::byte*>(p);
  if (base_ == nullptr || b < base_ || b >= base_ + bytes_) return -1;
  return b - base_;
}

void ReplyStaging::AddInPlace(const std::string& name, DType dtype, const Shape& shape,
                              uint64_t offset, SampleReply* reply) {
  FieldMeta meta;
  meta.name = name;
  meta.dtype = dtype;
  meta.shape = shape;
  meta.bytes = Tensor(dtype, shape, nullptr).bytes();
  meta.offset = offset;
  meta.in_place = true;
  reply->fields.push_back(std::move(meta));
}

struct ReplyStaging::Arena {
  SharedArena memory;
};

ReplyStaging::ReplyStaging(int arena_fd) {
  if (arena_fd >= 0) arena_ = std::make_unique<Arena>(Arena{SharedArena::Attach(arena_fd)});
  shared_ = arena_fd >= 0;
}

ReplyStaging::~ReplyStaging() = default;

char* ReplyStaging::data() { return shared_ ? arena_->memory.data() : buffer_.data(); }

size_t ReplyStaging::Take(size_t bytes) {
  const size_t offset = AlignUp(used_, kAlign);
  const size_t needed = offset + bytes;
  if (shared_) {
    if (needed > arena_->memory.size()) {
      const size_t grown = AlignUp(std::max(needed, arena_->memory.size() * 2), kGrowStep);
      std::string error;
      if (!arena_->memory.Reserve(grown, &error)) {
        throw SampleError(FailureKind::kMemory, "",
                          "the worker's shared memory cannot grow to " +
                              std::to_string(grown >> 20) + " MB: " + error);
      }
    }
  } else if (needed > buffer_.size()) {
    buffer_.resize(AlignUp(std::max(needed, buffer_.size() * 2), kGrowStep));
  }
  used_ = needed;
  return offset;
}

char* ReplyStaging::AddField(const std::string& name, DType dtype, const Shape& shape,
                             SampleReply* reply) {
  FieldMeta meta;
  meta.name = name;
  meta.dtype = dtype;
  meta.shape = shape;
  meta.bytes = Tensor(dtype, shape, nullptr).bytes();
  meta.offset = Take(meta.bytes);
  reply->fields.push_back(std::move(meta));
  return data() + reply->fields.back().offset;
}

bool ReplyStaging::Send(int fd, SampleReply* reply) {
  reply->arena_bytes = shared_ ? arena_->memory.size() : 0;
  const std::string body = EncodeSampleReply(*reply);
  return shared_ ? WriteMessage(fd, ReplyKind::kSample, body)
                 : WriteMessage(fd, ReplyKind::kSample, body, buffer_.data(), used_);
}

void ReplyStaging::Append(std::string* out, SampleReply* reply) {
  reply->arena_bytes = shared_ ? arena_->memory.size() : 0;
  const std::string body = EncodeSampleReply(*reply);
  if (shared_) {
    AppendMessage(out, ReplyKind::kSample, body);
  } else {
    AppendMessage(out, ReplyKind::kSample, body, buffer_.data(), used_);
  }
}

void AppendErrorReply(std::string* out, const ErrorReply& error) {
  AppendMessage(out, ReplyKind::kError, EncodeErrorReply(error));
}

void SendErrorReply(int fd, const ErrorReply& error) {
  if (!WriteMessage(fd, ReplyKind::kError, EncodeErrorReply(error))) _exit(0);
}

}  // namespace feedline::internal
