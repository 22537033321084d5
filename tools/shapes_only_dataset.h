// ShapesOnlyDataset: another dataset's samples, loaded in full, of which the
// loader gets only each field's shape. `bench --pipeline read|decode` on
// packed shards and HDF5 files measures reading and decoding with it, as
// RawImageDataset does for image files: whole images of varying sizes would
// otherwise be padded and copied into every batch, which is the collate's
// cost, not the storage's or the decoder's.
//
// A scalar field (a label) passes unchanged; a field of rank 1 or more
// becomes "<name>_shape", i64 [rank].
//
// Thread safety: immutable; Get may be called from many threads at once
// (each thread loads into a sample of its own).
#ifndef FEEDLINE_TOOLS_SHAPES_ONLY_DATASET_H_
#define FEEDLINE_TOOLS_SHAPES_ONLY_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/dataset.h"

namespace feedline::cli {

class ShapesOnlyDataset : public Dataset {
 public:
  explicit ShapesOnlyDataset(std::shared_ptr<const Dataset> inner);

  int64_t size() const override { return inner_->size(); }
  // Throws what the inner dataset's Get throws.
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override { return inner_->Source(index); }

 private:
  std::shared_ptr<const Dataset> inner_;
};

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SHAPES_ONLY_DATASET_H_
