// Dataset: random access to samples by index (paddle.io.Dataset,
// torch.utils.data.Dataset).
//
// A Dataset is immutable after construction and shared by all workers, so
// Get() must be safe to call from many threads at once. Anything a call needs
// to keep (decode buffers) goes in the SampleContext's scratch buffers.
//
// Example:
//   class Squares : public Dataset {
//    public:
//     int64_t size() const override { return 1000; }
//     void Get(int64_t i, Sample& out, SampleContext&) const override {
//       out.SetScalar<int64_t>("x", i * i);
//     }
//   };
#ifndef FEEDLINE_DATASET_H_
#define FEEDLINE_DATASET_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "feedline/export.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/tensor.h"

namespace feedline {

// A field whose dtype and shape are the same for every sample. The loader
// preallocates it in every batch slot and the dataset writes straight into
// its row, so no copy is made at collate time.
struct FEEDLINE_EXPORT FieldSpec {
  std::string name;
  DType dtype;
  Shape shape;  // of one sample, without the batch dimension
};

// A field padded to a multiple: in a batch, its extent in dimension d of a
// sample is the batch's largest rounded up to a multiple of multiples[d]
// (1 leaves it as it is): {"image", {1, 32, 32}} gives CHW images heights
// and widths that are multiples of 32, what detection models call
// size_divisibility.
struct PadMultiple {
  std::string field;
  std::vector<int64_t> multiples;
};

class FEEDLINE_EXPORT Dataset {
 public:
  virtual ~Dataset() = default;

  // Number of samples.
  virtual int64_t size() const = 0;

  // Fills `out` with sample `index` (0 <= index < size()). Throws SampleError
  // (or any std::exception) if the sample cannot be produced; the loader's
  // error policy handles it.
  virtual void Get(int64_t index, Sample& out, SampleContext& ctx) const = 0;

  // Where sample `index` comes from (a file name), for error messages.
  virtual std::string Source(int64_t index) const;

  // The length of sample `index` (tokens, frames) without loading it, for
  // DynamicBatchSampler. The default throws Error: the dataset has no lengths.
  virtual int64_t Length(int64_t index) const;

  // Fields with a fixed dtype and shape (see FieldSpec). Default: none.
  virtual std::vector<FieldSpec> FixedFields() const { return {}; }

  // Fields whose first dimension varies from sample to sample (a count of
  // objects): the default collate always pads them, with "<name>_lengths",
  // even in a batch whose samples happen to agree, so that every batch has
  // the same fields (CollateOptions::padded). Default: none.
  virtual std::vector<std::string> PaddedFields() const { return {}; }

  // Fields whose padded extents the default collate rounds up to a
  // multiple (PadMultiple; a detection dataset's size_divisibility), padded
  // in every batch. Default: none.
  virtual std::vector<PadMultiple> PadMultiples() const { return {}; }

  // Called by the loader when it abandons the samples in flight (a new
  // iteration, Reset, destruction): their results will be discarded. A
  // dataset whose Get can be stopped from outside (one that waits on a worker
  // process) may make those calls return soon by throwing. Called from any
  // thread, with the loader's lock held: it must not block or call back into
  // the loader. Default: nothing (a running Get completes).
  virtual void AbandonInFlight() const {}

  // The epoch's plan, for a dataset that fetches ahead (a remote
  // ShardDataset with a shard cache): when an epoch starts, before its first
  // Get, the loader passes the indices it will ask for, in its order (from
  // the batch it resumes at); an empty order when the epoch is abandoned or
  // the loader shuts down (nothing more will be asked for). Then, as batches
  // are handed out, EpochProgress(n): the first n indices of that order are
  // delivered (in order; with in_order = false, n counts the delivered
  // batches' indices, which may not be a prefix). The order is valid during
  // the call only. Called with the loader's lock held: must not block or
  // call back into the loader. Default: nothing.
  virtual void EpochOrder(std::span<const int64_t> order) const { (void)order; }
  virtual void EpochProgress(int64_t delivered) const { (void)delivered; }
};

// Throws IndexError unless 0 <= index < size; used by datasets to check args.
FEEDLINE_EXPORT void CheckIndex(int64_t index, int64_t size);

}  // namespace feedline

#endif  // FEEDLINE_DATASET_H_
