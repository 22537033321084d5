// FailureRecorder: a Dataset that forwards to another and remembers which
// samples failed to load (path, reason, message), so that `bench` can name
// the broken files that error policy skip or replace went past; the
// loader's statistics only count them.
//
// Thread safety: Get may be called from many threads at once (a mutex
// guards the record); failures() may be called at any time.
#ifndef FEEDLINE_TOOLS_FAILURE_RECORDER_H_
#define FEEDLINE_TOOLS_FAILURE_RECORDER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "feedline/dataset.h"

namespace feedline::cli {

struct RecordedFailure {
  std::string path;
  std::string reason;
  std::string message;
};

class FailureRecorder : public Dataset {
 public:
  // Keeps the first `keep` distinct failed paths (a file that fails in every
  // epoch is kept once).
  FailureRecorder(std::shared_ptr<const Dataset> inner, size_t keep);

  int64_t size() const override { return inner_->size(); }
  // Forwards; on an exception records it, then rethrows it unchanged.
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override { return inner_->Source(index); }
  int64_t Length(int64_t index) const override { return inner_->Length(index); }
  std::vector<FieldSpec> FixedFields() const override { return inner_->FixedFields(); }

  // The kept failures, in the order they happened.
  std::vector<RecordedFailure> failures() const;
  // Distinct failed paths seen, kept or not.
  int64_t distinct_failures() const;

 private:
  void Record(int64_t index, const std::exception& e) const;

  std::shared_ptr<const Dataset> inner_;
  size_t keep_;
  mutable std::mutex mu_;
  mutable std::vector<RecordedFailure> kept_;           // guarded by mu_
  mutable std::unordered_set<std::string> seen_paths_;  // guarded by mu_
};

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_FAILURE_RECORDER_H_
