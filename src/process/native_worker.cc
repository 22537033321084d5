#include "feedline/extension/native_worker.h"

#include <unistd.h>

#include <cstring>
#include <new>
#include <string>

#include "feedline/error.h"
#include "src/core/sample_binder.h"
#include "src/core/sample_context_access.h"
#include "src/process/worker_child.h"

namespace feedline::extension {
namespace {

using internal::SampleBinder;
using internal::SampleContextAccess;

// Loads one sample (`load(sample, ctx)`: Get, or a stream's Next, false at
// its end) into `staging` and replies (to `gather`, when it is not null: a
// reply among those to a kSamples request); a failure becomes an error
// reply, as it would become a failed sample on a worker thread. Fields
// bound to the requested row are written there by Get itself (the batch
// row, in shared memory); the others are copied into the arena. A stream's
// end is a kEnd reply.
template <typename Load>
void ServeOne(int fd, const WorkRequest& request, SampleContext& ctx, Sample& sample,
              RequestedRow& row, ReplyStaging& staging, SampleReply& reply, std::string* gather,
              Load&& load) {
  auto send_error = [&](const ErrorReply& error) {
    if (gather != nullptr) {
      AppendErrorReply(gather, error);
    } else {
      SendErrorReply(fd, error);
    }
  };
  try {
    SampleContextAccess::Reset(ctx, request.epoch, request.context_index);
    sample.Clear();
    row.Bind(sample);
    if (gather != nullptr) {
      staging.NextSample();
    } else {
      staging.Clear();
    }
    reply.fields.clear();
    if (!load(sample, ctx)) {
      if (!WriteMessage(fd, ReplyKind::kEnd, std::string())) _exit(0);  // the parent is gone
      return;
    }
    for (int i = 0; i < sample.num_fields(); ++i) {
      const Tensor& field = sample.field(i);
      const int64_t in_row = SampleBinder::IsBound(sample, i) ? row.OffsetOf(field.raw()) : -1;
      if (in_row >= 0) {
        ReplyStaging::AddInPlace(sample.field_name(i), field.dtype(), field.shape(),
                                 static_cast<uint64_t>(in_row), &reply);
        continue;
      }
      char* to = staging.AddField(sample.field_name(i), field.dtype(), field.shape(), &reply);
      if (field.bytes() > 0) std::memcpy(to, field.raw(), field.bytes());
    }
    const auto stages = SampleContextAccess::DrainStageTimes(ctx);
    for (int s = 0; s < kNumStages; ++s) reply.stage_ns[s] = stages[static_cast<size_t>(s)];
    if (gather != nullptr) {
      staging.Append(gather, &reply);
    } else if (!staging.Send(fd, &reply)) {
      _exit(0);  // the parent is gone
    }
  } catch (const SampleError& e) {
    send_error(SampleErrorReply(e));
  } catch (const std::bad_alloc&) {
    send_error(InterruptReply(kBadAllocType, "out of memory"));
  } catch (const std::exception& e) {
    send_error(ExceptionReply(e.what()));
  } catch (...) {
    send_error(ExceptionReply("the dataset threw something that is not a std::exception"));
  }
}

void ServeSample(const Dataset& dataset, int fd, const WorkRequest& request, SampleContext& ctx,
                 Sample& sample, RequestedRow& row, ReplyStaging& staging, SampleReply& reply,
                 std::string* gather = nullptr) {
  ServeOne(fd, request, ctx, sample, row, staging, reply, gather,
           [&](Sample& out, SampleContext& c) {
             dataset.Get(request.index, out, c);
             return true;
           });
}

// A kSamples request: each sample as ServeSample does, the replies gathered
// and written at once.
void ServeSamples(const Dataset& dataset, int fd, const WorkRequest& request, SampleContext& ctx,
                  Sample& sample, RequestedRow& row, ReplyStaging& staging, SampleReply& reply,
                  std::string& gather) {
  gather.clear();
  staging.Clear();
  WorkRequest one = request;
  one.kind = static_cast<uint32_t>(RequestKind::kSample);
  for (size_t i = 0; i < row.num_samples(); ++i) {
    const RequestedSample& requested = row.Select(i);
    one.index = requested.index;
    one.context_index = requested.context_index;
    ServeSample(dataset, fd, one, ctx, sample, row, staging, reply, &gather);
  }
  if (!WriteAll(fd, gather.data(), gather.size())) _exit(0);  // the parent is gone
}

}  // namespace

NativeWorkerProgram::NativeWorkerProgram(std::shared_ptr<const Dataset> dataset,
                                         std::function<void(int)> worker_init)
    : dataset_(std::move(dataset)), worker_init_(std::move(worker_init)) {}

NativeWorkerProgram::NativeWorkerProgram(std::shared_ptr<const IterableDataset> stream,
                                         std::function<void(int)> worker_init)
    : stream_(std::move(stream)), worker_init_(std::move(worker_init)) {}

void NativeWorkerProgram::RunChild(const WorkerChannel& channel) {
  EnterWorkerChild(channel);
  const int fd = channel.socket_fd;
  if (worker_init_) {
    try {
      worker_init_(channel.worker_id);
    } catch (const std::exception& e) {
      SendErrorReply(fd, WorkerInitReply(std::string("worker_init failed: ") + e.what()));
      _exit(1);
    } catch (...) {
      SendErrorReply(fd, WorkerInitReply("worker_init threw a non-std::exception"));
      _exit(1);
    }
  }
  if (!WriteMessage(fd, ReplyKind::kReady, std::string())) _exit(0);
  ReplyStaging staging(channel.arena_fd);
  RequestedRow row(channel);
  SampleReply reply;
  Sample sample;
  SampleContext ctx(channel.seed, 0, 0, channel.worker_id);
  WorkRequest request;
  std::string gather;
  std::unique_ptr<SampleStream> pass;  // a stream's current pass
  while (row.Read(fd, &request)) {
    const auto kind = static_cast<RequestKind>(request.kind);
    if (dataset_ && kind == RequestKind::kSamples) {
      ServeSamples(*dataset_, fd, request, ctx, sample, row, staging, reply, gather);
    } else if (dataset_ && kind == RequestKind::kSample) {
      ServeSample(*dataset_, fd, request, ctx, sample, row, staging, reply);
    } else if (stream_ && kind == RequestKind::kOpen) {
      ServePassOpen(channel, request, &pass);
    } else if (stream_ && kind == RequestKind::kNext) {
      if (!pass) {
        SendErrorReply(fd, ExceptionReply("the worker process has no open pass over its stream"));
        continue;
      }
      ServeOne(fd, request, ctx, sample, row, staging, reply, nullptr,
               [&](Sample& out, SampleContext& c) {
                 if (pass->Next(out, c)) return true;
                 pass.reset();
                 return false;
               });
    } else {
      SendErrorReply(fd, ExceptionReply(dataset_ ? "a native worker process of a Dataset loads "
                                                   "map-style samples only"
                                                 : "a native worker process of an "
                                                   "IterableDataset serves its stream only"));
    }
  }
  _exit(0);  // end of file: the loader closed this worker
}

void NativeWorkerProgram::ServePassOpen(const WorkerChannel& channel, const WorkRequest& request,
                                        std::unique_ptr<SampleStream>* pass) const {
  const int fd = channel.socket_fd;
  pass->reset();
  try {
    // request.index names the worker whose pass this is (this one).
    *pass = stream_->Open(static_cast<int>(request.index), channel.num_workers, request.epoch);
  } catch (const SampleError& e) {
    SendErrorReply(fd, SampleErrorReply(e));
    return;
  } catch (const std::bad_alloc&) {
    SendErrorReply(fd, InterruptReply(kBadAllocType, "out of memory"));
    return;
  } catch (const std::exception& e) {
    SendErrorReply(fd, ExceptionReply(e.what()));
    return;
  } catch (...) {
    SendErrorReply(fd, ExceptionReply("IterableDataset::Open threw something that is not a "
                                      "std::exception"));
    return;
  }
  if (!WriteMessage(fd, ReplyKind::kReady, std::string())) _exit(0);  // the parent is gone
}

void NativeWorkerProgram::RaiseError(const ErrorReply& error, int64_t index) const {
  if (error.cause == ErrorCause::kInterrupt && error.origin.exception_type == kBadAllocType) {
    throw std::bad_alloc();
  }
  WorkerProgram::RaiseError(error, index);
}

}  // namespace feedline::extension
