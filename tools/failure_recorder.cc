#include "tools/failure_recorder.h"

#include <utility>

#include "feedline/error.h"

namespace feedline::cli {

FailureRecorder::FailureRecorder(std::shared_ptr<const Dataset> inner, size_t keep)
    : inner_(std::move(inner)), keep_(keep) {
  if (!inner_) throw Error("FailureRecorder: dataset must not be null");
}

void FailureRecorder::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  try {
    inner_->Get(index, out, ctx);
  } catch (const std::exception& e) {
    Record(index, e);
    throw;
  }
}

void FailureRecorder::Record(int64_t index, const std::exception& e) const {
  RecordedFailure failure;
  if (const auto* sample_error = dynamic_cast<const SampleError*>(&e)) {
    failure.path = sample_error->source();
    failure.reason = sample_error->reason();
    failure.message = sample_error->message();
  } else {
    failure.reason = "exception";
    failure.message = e.what();
  }
  if (failure.path.empty()) {
    try {
      failure.path = inner_->Source(index);
    } catch (const std::exception&) {
      failure.path = "#" + std::to_string(index);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!seen_paths_.insert(failure.path).second) return;
  if (kept_.size() < keep_) kept_.push_back(std::move(failure));
}

std::vector<RecordedFailure> FailureRecorder::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_;
}

int64_t FailureRecorder::distinct_failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(seen_paths_.size());
}

}  // namespace feedline::cli
