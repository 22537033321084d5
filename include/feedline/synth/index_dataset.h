// IndexDataset: a trivial in-memory dataset whose sample i is one int64, i.
// `feedline bench --synthetic N` and bench/loader_overhead_benchmark run the
// loader over it, so the time measured is the engine's own per-sample
// overhead; the loader tests use it, with `noise`, to see which sample each
// row holds and that its random draws are the sample's own.
//
// Part of feedline_synth (include/feedline/synth/, src/synth/): synthetic
// data built on the public API only, for the tests, benchmarks, `feedline
// synth` and the Python module. Not installed with the library.
//
// Thread safety: immutable; Get() may be called from many threads.
#ifndef FEEDLINE_SYNTH_INDEX_DATASET_H_
#define FEEDLINE_SYNTH_INDEX_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "feedline/dataset.h"

namespace feedline::synth {

struct IndexDatasetOptions {
  // Declares the fields fixed, so the loader writes them straight into the
  // batch rows.
  bool fixed = true;
  // Adds "noise": 4 f32 draws from the sample's Rng.
  bool noise = false;
};

class IndexDataset : public Dataset {
 public:
  // Throws Error if size < 0.
  explicit IndexDataset(int64_t size, IndexDatasetOptions options = {});

  int64_t size() const override { return size_; }
  // Writes the field "index" (i64 scalar) and, with `noise`, "noise" (f32 [4]).
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  // "synthetic:<index>".
  std::string Source(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;

 private:
  int64_t size_;
  IndexDatasetOptions options_;
};

}  // namespace feedline::synth

#endif  // FEEDLINE_SYNTH_INDEX_DATASET_H_
