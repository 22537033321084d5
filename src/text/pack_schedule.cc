#include "feedline/text/pack_schedule.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "feedline/dataset.h"
#include "feedline/error.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"

namespace feedline::text {

std::vector<int64_t> LengthsOf(const Dataset& documents) {
  std::vector<int64_t> lengths(static_cast<size_t>(documents.size()));
  for (int64_t i = 0; i < documents.size(); ++i) {
    lengths[static_cast<size_t>(i)] = documents.Length(i);
  }
  return lengths;
}

// The current epoch's plan, the next one's (planned when the loader starts
// it, while workers may still load the last rows of the current) and one
// more for a set_epoch back and forth.
struct PackSchedule::Cache {
  static constexpr size_t kEpochsKept = 3;
  feedline::internal::Mutex mu;
  std::deque<std::pair<int64_t, std::shared_ptr<const PackPlan>>> plans GUARDED_BY(mu);
};

PackSchedule::PackSchedule(std::vector<int64_t> lengths, std::shared_ptr<const Sampler> documents,
                           PackOptions options)
    : lengths_(std::move(lengths)),
      documents_(std::move(documents)),
      options_(options),
      cache_(std::make_unique<Cache>()) {
  options_.Check();
  if (documents_ == nullptr) throw Error("PackSchedule: the document sampler must not be null");
  const int64_t seq_len = options_.seq_len;
  for (size_t i = 0; i < lengths_.size(); ++i) {
    const int64_t length = lengths_[i];
    if (length < 0) {
      throw Error("PackSchedule: document " + std::to_string(i) + " has a negative length (" +
                  std::to_string(length) + ")");
    }
    if (length == 0) continue;
    if (length > seq_len && options_.long_documents == LongDocuments::kDrop) continue;
    const int64_t kept =
        options_.long_documents == LongDocuments::kTruncate ? std::min(length, seq_len) : length;
    // Its pieces: full rows and a remainder (fit strategies); under
    // concat_split a document starting anywhere in a row spans at most one
    // row more than its own length fills.
    const int64_t rows_filled = (kept + seq_len - 1) / seq_len;
    max_rows_ += options_.strategy == PackStrategy::kConcatSplit ? rows_filled + 1 : rows_filled;
  }
}

PackSchedule::~PackSchedule() = default;

std::shared_ptr<const PackPlan> PackSchedule::Rows(int64_t epoch) const {
  {
    feedline::internal::MutexLock lock(&cache_->mu);
    for (const auto& [planned, plan] : cache_->plans) {
      if (planned == epoch) return plan;
    }
  }
  // Planned without the lock, so that workers still reading the current
  // epoch's plan are not held up while the consumer plans the next one.
  // Two threads asking for the same new epoch may both plan it; the first
  // to finish is kept and both return it.
  const std::vector<int64_t> order = documents_->Indices(epoch);
  auto plan = std::make_shared<const PackPlan>(PlanPacking(order, lengths_, options_));
  feedline::internal::MutexLock lock(&cache_->mu);
  for (const auto& [planned, kept] : cache_->plans) {
    if (planned == epoch) return kept;
  }
  cache_->plans.emplace_back(epoch, plan);
  if (cache_->plans.size() > Cache::kEpochsKept) cache_->plans.pop_front();
  return plan;
}

}  // namespace feedline::text
