#include "src/loader/error_policy.h"

#include <mutex>
#include <string>
#include <utility>

#include "feedline/rng.h"

namespace feedline::internal {
namespace {

// Stream id of the generator that picks substitutes for failed samples.
constexpr uint64_t kReplaceStream = 0x7265706c61636500ull;

}  // namespace

FailurePolicy::FailurePolicy(const LoaderOptions& options, const Dataset* dataset)
    : policy_(options.error_policy),
      max_replace_attempts_(options.max_replace_attempts),
      seed_(options.seed),
      timeout_(options.timeout),
      dataset_(dataset) {}

int64_t FailurePolicy::SubstituteIndex(int64_t epoch, int64_t original, int attempt) const {
  if (attempt == 0) return original;
  Rng pick(seed_, static_cast<uint64_t>(epoch), static_cast<uint64_t>(original),
           kReplaceStream + static_cast<uint64_t>(attempt));
  return static_cast<int64_t>(pick.UniformInt(static_cast<uint64_t>(dataset_->size())));
}

SampleError FailurePolicy::TimeoutFor(int64_t index) const {
  std::string source;
  try {
    if (dataset_) source = dataset_->Source(index);
  } catch (...) {
  }
  return TimeoutError(index, std::move(source), static_cast<double>(timeout_.count()) / 1000.0);
}

void FailurePolicy::HandleFailure(Slot* slot, int64_t row, SampleError error, int attempt,
                                  SubstituteLoader& loader) const {
  const size_t r = static_cast<size_t>(row);
  const int64_t original = slot->indices[r];
  // The planned sample's own failure, for the message if every substitute
  // fails too (unknown when a substitute's timeout brought the row here).
  std::optional<SampleError> first;
  if (attempt == 1) first = error;
  for (;; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(slot->error_mu);
      if (attempt == 1) {
        slot->error_reasons.push_back(error.reason());
      } else {
        ++slot->failed_substitutes;
      }
    }
    if (policy_ == ErrorPolicy::kSkip) {
      slot->status[r] = RowStatus::kSkipped;
      return;
    }
    if (policy_ == ErrorPolicy::kRaise || attempt >= max_replace_attempts_) {
      if (policy_ == ErrorPolicy::kReplace) {
        // Name the sample that was asked for, not the last substitute.
        std::string source;
        try {
          source = dataset_->Source(original);
        } catch (...) {
        }
        const int substitutes = attempt - 1;
        std::string message = first ? first->message() : std::string("failed");
        message += "; the " + std::to_string(substitutes) + " substitute" +
                   (substitutes == 1 ? "" : "s") + " tried for it failed too (the last, " +
                   error.what() + ")";
        error = first ? SampleError(first->kind(), source, message, original, first->origin())
                      : SampleError(error.kind(), source, message, original, error.origin());
      }
      slot->status[r] = RowStatus::kFailed;
      std::lock_guard<std::mutex> lock(slot->error_mu);
      slot->errors.emplace_back(row, error);
      return;
    }
    const int64_t index = SubstituteIndex(slot->epoch, original, attempt);
    std::optional<SampleError> failure;
    switch (loader.Load(index, attempt, &failure)) {
      case LoadOutcome::kOk:
        slot->indices[r] = index;
        slot->status[r] = RowStatus::kReplaced;
        return;
      case LoadOutcome::kAbandoned:
        slot->status[r] = RowStatus::kCancelled;
        return;
      case LoadOutcome::kFailed:
        error = std::move(*failure);
        break;
    }
  }
}

}  // namespace feedline::internal
