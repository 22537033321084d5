// IndexDataset: a trivial in-memory dataset whose sample i is one int64, i.
// `feedline bench --synthetic N` runs the loader over it, so the measured
// time is the engine's own per-sample overhead.
//
// Thread safety: immutable; Get() may be called from many threads.
#ifndef FEEDLINE_TOOLS_INDEX_DATASET_H_
#define FEEDLINE_TOOLS_INDEX_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/dataset.h"

namespace feedline::cli {

class IndexDataset : public Dataset {
 public:
  // Throws Error if size < 0.
  explicit IndexDataset(int64_t size);

  int64_t size() const override { return size_; }
  // Writes the field "index" (i64 scalar), straight into the batch row.
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;

 private:
  int64_t size_;
};

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_INDEX_DATASET_H_
