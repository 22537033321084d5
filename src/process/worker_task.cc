#include "feedline/extension/worker_task.h"

#include <new>
#include <utility>

#include "feedline/error.h"

namespace feedline::extension {

ErrorReply SampleErrorReply(const SampleError& error) {
  return {ErrorCause::kSample, error.kind(), error.message(), error.source(), error.origin()};
}

ErrorReply ExceptionReply(std::string message, std::string exception_type) {
  FailureOrigin origin;
  origin.exception_type = std::move(exception_type);
  return {ErrorCause::kSample, FailureKind::kException, std::move(message), "",
          std::move(origin)};
}

ErrorReply WorkerInitReply(std::string message) {
  return {ErrorCause::kWorkerInit, FailureKind::kException, std::move(message), "", {}};
}

ErrorReply InterruptReply(std::string exception_type, std::string message) {
  FailureOrigin origin;
  origin.exception_type = std::move(exception_type);
  return {ErrorCause::kInterrupt, FailureKind::kException, std::move(message), "",
          std::move(origin)};
}

void WorkerTask::Load(const TaskRequest&, TaskOutput&) {
  throw Error("this worker process serves a stream, not map-style samples");
}

void WorkerTask::OpenPass(const TaskRequest&) {
  throw Error("this worker process serves map-style samples, not a stream");
}

bool WorkerTask::Next(const TaskRequest&, TaskOutput&) {
  throw Error("this worker process serves map-style samples, not a stream");
}

bool WorkerTask::Collate(std::span<const int64_t>, TaskOutput&) { return false; }

ErrorReply WorkerTask::Failure(std::exception_ptr error) const {
  try {
    std::rethrow_exception(std::move(error));
  } catch (const SampleError& e) {
    return SampleErrorReply(e);
  } catch (const std::bad_alloc&) {
    return InterruptReply(kBadAllocType, "out of memory");
  } catch (const std::exception& e) {
    return ExceptionReply(e.what());
  } catch (...) {
    return ExceptionReply("the worker's code threw something that is not a std::exception");
  }
}

}  // namespace feedline::extension
