#include "src/process/child_loop.h"

#include <unistd.h>

#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/core/sample_binder.h"
#include "src/core/sample_context_access.h"
#include "src/loader/slot_allocator.h"

namespace feedline::internal {
namespace {

using extension::TaskOutput;
using extension::TaskRequest;
using extension::WorkerTask;

// A reply's fields, where the parent reads them: the requested batch row
// for a field it expects there, else the request's room (a collated
// batch's fields, as far as they fit), else the staging (the shared arena).
class ChildReply final : public TaskOutput {
 public:
  ChildReply(RequestedRow& row, ReplyStaging& staging) : row_(row), staging_(staging) {}

  // Before each reply: no fields, no schema, no room.
  void Begin() {
    reply_.fields.clear();
    if (!reply_.schema.empty()) reply_.schema = SampleSchema();
    room_offset_ = room_end_ = 0;
  }
  // The fields that fit go to the `bytes` at `offset` in the slots, one
  // after the other (each on the slots' alignment), until the next Begin.
  void SetRoom(uint64_t offset, uint64_t bytes) {
    if (bytes == 0 || row_.InSlots(offset, bytes) == nullptr) return;  // none, or damaged
    room_offset_ = offset;
    room_end_ = offset + bytes;
  }
  SampleReply& reply() { return reply_; }

  Tensor Field(const std::string& name, DType dtype, const Shape& shape) override {
    if (std::byte* to = row_.Find(name, dtype, shape)) {
      ReplyStaging::AddInPlace(name, dtype, shape, static_cast<uint64_t>(row_.OffsetOf(to)),
                               &reply_);
      return Tensor(dtype, shape, to);
    }
    if (std::byte* to = TakeRoom(Tensor(dtype, shape, nullptr).bytes())) {
      ReplyStaging::AddInPlace(name, dtype, shape, static_cast<uint64_t>(row_.OffsetOf(to)),
                               &reply_);
      return Tensor(dtype, shape, to);
    }
    return Tensor(dtype, shape, staging_.AddField(name, dtype, shape, &reply_));
  }

  void SetSchema(SampleSchema schema) override { reply_.schema = std::move(schema); }

  void Bind(Sample& sample) override { row_.Bind(sample); }

  void Put(const Sample& sample) override {
    for (int i = 0; i < sample.num_fields(); ++i) {
      const Tensor& field = sample.field(i);
      const int64_t in_row =
          SampleBinder::IsBound(sample, i) ? row_.OffsetOf(field.raw()) : -1;
      if (in_row >= 0) {
        ReplyStaging::AddInPlace(sample.field_name(i), field.dtype(), field.shape(),
                                 static_cast<uint64_t>(in_row), &reply_);
        continue;
      }
      char* to = staging_.AddField(sample.field_name(i), field.dtype(), field.shape(), &reply_);
      if (field.bytes() > 0) std::memcpy(to, field.raw(), field.bytes());
    }
  }

 private:
  // `bytes` of the room, or nullptr when they do not fit in what is left.
  std::byte* TakeRoom(uint64_t bytes) {
    constexpr uint64_t kAlign = SlotAllocator::kAlignment;
    const uint64_t at = (room_offset_ + kAlign - 1) / kAlign * kAlign;
    if (room_end_ == 0 || at > room_end_ || bytes > room_end_ - at) return nullptr;
    room_offset_ = at + bytes;
    return row_.InSlots(at, bytes);
  }

  RequestedRow& row_;
  ReplyStaging& staging_;
  SampleReply reply_;
  uint64_t room_offset_ = 0;  // the room's first free byte, in the slots
  uint64_t room_end_ = 0;     // 0: no room
};

class ChildLoop {
 public:
  ChildLoop(const WorkerChannel& channel, WorkerTask& task)
      : fd_(channel.socket_fd), task_(task), row_(channel), staging_(channel.arena_fd),
        out_(row_, staging_), context_(channel.seed, 0, 0, channel.worker_id) {}

  void Run() {
    WorkRequest request;
    while (Read(&request)) {
      switch (static_cast<RequestKind>(request.kind)) {
        case RequestKind::kSample:
          staging_.Clear();
          ServeItem(request, request.index, request.context_index, nullptr, /*stream=*/false);
          break;
        case RequestKind::kSamples:
          ServeSamples(request, /*then_collate=*/false);
          break;
        case RequestKind::kSamplesThenCollate:
          ServeSamples(request, /*then_collate=*/true);
          break;
        case RequestKind::kOpen:
          ServeOpen(request);
          break;
        case RequestKind::kNext:
          staging_.Clear();
          ServeItem(request, request.index, request.context_index, nullptr, /*stream=*/true);
          break;
        case RequestKind::kCollate:
          ServeCollate(request);
          break;
        default:
          SendErrorReply(fd_, extension::ExceptionReply("the worker process got a request of "
                                                        "unknown kind " +
                                                        std::to_string(request.kind)));
      }
    }
  }

 private:
  // The next request, the task told before and after the wait. False at end
  // of file; a malformed request ends the child (the parent sees its exit).
  bool Read(WorkRequest* request) {
    task_.BeforeWait();
    bool ok = false;
    try {
      ok = row_.Read(fd_, request);
    } catch (...) {
      _exit(1);
    }
    task_.AfterWait();
    return ok;
  }

  void Reply(ReplyKind kind) {
    if (!WriteMessage(fd_, kind, std::string())) _exit(0);  // the parent is gone
  }

  void Fail(std::string* gather) {
    const ErrorReply error = task_.Failure(std::current_exception());
    if (gather != nullptr) {
      AppendErrorReply(gather, error);
    } else {
      SendErrorReply(fd_, error);
    }
  }

  // One Load or Next: its fields replied (to `gather`, when not null: one
  // of a kSamples request's replies), its failure replied as the task
  // reports it, or a pass's end as kEnd. True if it replied with a sample.
  bool ServeItem(const WorkRequest& request, int64_t index, int64_t context_index,
                 std::string* gather, bool stream) {
    try {
      SampleContextAccess::Reset(context_, request.epoch, context_index);
      SampleContextAccess::SetBatch(context_, row_.batch());
      out_.Begin();
      const TaskRequest task_request{index, request.epoch, request.seed, &context_};
      bool produced = true;
      if (stream) {
        produced = task_.Next(task_request, out_);
      } else {
        task_.Load(task_request, out_);
      }
      if (!produced) {
        Reply(ReplyKind::kEnd);
        return false;
      }
      SampleReply& reply = out_.reply();
      const auto stages = SampleContextAccess::DrainStageTimes(context_);
      for (int s = 0; s < kNumStages; ++s) reply.stage_ns[s] = stages[static_cast<size_t>(s)];
      reply.images_decoded = SampleContextAccess::DrainImagesDecoded(context_);
      if (gather != nullptr) {
        staging_.Append(gather, &reply);
      } else if (!staging_.Send(fd_, &reply)) {
        _exit(0);  // the parent is gone
      }
      ++sample_replies_;
      return true;
    } catch (...) {
      Fail(gather);
      return false;
    }
  }

  // Each sample as a kSample, a failed one replied as its failure while the
  // others go on; `then_collate`, the batch of them all after (CollateLoaded);
  // the replies written at once, so that the parent wakes once.
  void ServeSamples(const WorkRequest& request, bool then_collate) {
    gather_.clear();
    staging_.Clear();
    size_t loaded = 0;
    for (size_t i = 0; i < row_.num_samples(); ++i) {
      const RequestedSample& sample = row_.Select(i);
      staging_.NextSample();
      loaded += ServeItem(request, sample.index, sample.context_index, &gather_,
                          /*stream=*/false);
    }
    if (then_collate) CollateLoaded(request, loaded == row_.num_samples() ? loaded : 0);
    if (!WriteAll(fd_, gather_.data(), gather_.size())) _exit(0);  // the parent is gone
  }

  // The reply after a kSamplesThenCollate request's samples: the batch of
  // its `count` sample replies (the last ones sent), or kEnd when there is
  // none to make (count 0: a sample failed, and its substitute belongs to
  // the batch) or the task keeps nothing; collate's failure as its error.
  void CollateLoaded(const WorkRequest& request, size_t count) {
    replies_.clear();
    for (size_t i = count; i > 0; --i) replies_.push_back(sample_replies_ - static_cast<int64_t>(i));
    staging_.NextSample();
    out_.Begin();
    out_.SetRoom(request.room_offset, request.room_bytes);
    try {
      if (count == 0 || !task_.Collate(replies_, out_)) {
        AppendMessage(&gather_, ReplyKind::kEnd, std::string());
        return;
      }
      staging_.Append(&gather_, &out_.reply());
    } catch (...) {
      Fail(&gather_);
    }
  }

  void ServeOpen(const WorkRequest& request) {
    try {
      task_.OpenPass(TaskRequest{request.index, request.epoch, request.seed, &context_});
    } catch (...) {
      Fail(nullptr);
      return;
    }
    Reply(ReplyKind::kReady);
  }

  // The request lists the replies by number as a kSamples request lists
  // samples (their index).
  void ServeCollate(const WorkRequest& request) {
    replies_.clear();
    for (size_t i = 0; i < row_.num_samples(); ++i) replies_.push_back(row_.Select(i).index);
    staging_.Clear();
    out_.Begin();
    out_.SetRoom(request.room_offset, request.room_bytes);
    try {
      if (!task_.Collate(replies_, out_)) {
        Reply(ReplyKind::kEnd);  // not held: the parent collates
        return;
      }
    } catch (...) {
      Fail(nullptr);
      return;
    }
    if (!staging_.Send(fd_, &out_.reply())) _exit(0);  // the parent is gone
  }

  const int fd_;
  WorkerTask& task_;
  RequestedRow row_;
  ReplyStaging staging_;
  ChildReply out_;
  SampleContext context_;
  std::string gather_;            // the replies to a kSamples request
  std::vector<int64_t> replies_;  // a kCollate request's
  // The sample replies sent, counted from 0 as the parent counts them
  // (WorkerProgram::OnSampleReply): the numbers WorkerTask::Collate takes.
  int64_t sample_replies_ = 0;
};

}  // namespace

void RunWorkerChild(const WorkerChannel& channel, extension::WorkerProgram& program) {
  EnterWorkerChild(channel);
  const int fd = channel.socket_fd;
  std::unique_ptr<WorkerTask> task;
  try {
    task = program.MakeTask(
        extension::WorkerTaskInfo{channel.worker_id, channel.num_workers, channel.seed});
    task->Start();
  } catch (...) {
    const WorkerTask fallback;  // MakeTask threw: the default report
    const WorkerTask& reporter = task ? *task : fallback;
    SendErrorReply(fd, extension::WorkerInitReply(
                           reporter.Failure(std::current_exception()).message));
    _exit(1);
  }
  if (!WriteMessage(fd, ReplyKind::kReady, std::string())) _exit(0);
  ChildLoop(channel, *task).Run();
  _exit(0);  // end of file: the loader closed this worker
}

}  // namespace feedline::internal
