// Collate: how the samples of a batch become the batch's tensors.
//
// The default collator stacks fields whose shape is the same in every sample
// into [B, ...]. A field whose shape varies is padded to the batch's largest
// extent in every dimension with pad_value, and a "<name>_lengths" i64 [B]
// field gives each sample's first dimension; or, when listed in `ragged`, its
// values are concatenated along the first dimension with a "<name>_offsets"
// i64 [B + 1] field. Fields a dataset declares fixed (Dataset::FixedFields)
// were written in place and are not copied again.
//
// A custom collate function receives the samples and a BatchBuilder whose
// tensors live in the batch slot.
//
// Thread safety: collate functions run on worker threads, several at once.
#ifndef FEEDLINE_COLLATE_H_
#define FEEDLINE_COLLATE_H_

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/sample.h"
#include "feedline/tensor.h"

namespace feedline {

// Adds fields to a batch being built. Memory is owned by the batch slot and
// reused from batch to batch.
class FEEDLINE_EXPORT BatchBuilder {
 public:
  virtual ~BatchBuilder() = default;
  // A new field of the batch; contents unspecified until written.
  virtual Tensor Add(std::string_view name, DType dtype, const Shape& shape) = 0;
  // Hands the batch an object of the collate function's own beside its
  // tensors (Batch::attachment), kept until the slot is filled again: what
  // a Python collate_fn returned, delivered as it is. Builders that cannot
  // carry one throw Error.
  virtual void Attach(std::shared_ptr<const void> object);
};

struct FEEDLINE_EXPORT CollateOptions {
  double pad_value = 0.0;
  std::vector<std::string> ragged;  // fields to keep ragged instead of padding
  // Fields always padded, with "<name>_lengths", even in a batch whose samples
  // happen to agree in shape, so the batch layout does not vary.
  std::vector<std::string> padded;
  // Padded fields whose extents are rounded up to multiples (PadMultiple,
  // dataset.h); each is padded in every batch, as if listed in `padded`.
  // A sample whose rank differs from its multiples' count is a SampleError.
  std::vector<PadMultiple> pad_multiples;
};

// The default collation of `samples` into `out` (see above). Throws
// SampleError if samples disagree on a field's dtype or rank, or if a field is
// missing from some samples.
FEEDLINE_EXPORT void DefaultCollate(std::span<const Sample* const> samples,
                                    const CollateOptions& options, BatchBuilder& out);

using CollateFn = std::function<void(std::span<const Sample* const> samples, BatchBuilder& out)>;

}  // namespace feedline

#endif  // FEEDLINE_COLLATE_H_
