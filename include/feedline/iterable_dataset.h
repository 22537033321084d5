// IterableDataset: a streaming source of samples (paddle.io.IterableDataset).
//
// The loader opens one stream per worker; worker w of n must read a disjoint
// split of the data (as in Paddle and torch, where each worker gets a copy and
// uses get_worker_info() to pick its part). With num_workers = 0 the loader
// opens a single stream (0, 1). Each worker builds whole batches from its own
// stream and batches are delivered round-robin over the workers, so the
// batches depend on the worker count (unlike a Dataset's).
//
// Thread safety: Open() may be called from several threads at once; each
// returned stream is used by one thread.
#ifndef FEEDLINE_ITERABLE_DATASET_H_
#define FEEDLINE_ITERABLE_DATASET_H_

#include <cstdint>
#include <memory>

#include "feedline/export.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"

namespace feedline {

class FEEDLINE_EXPORT SampleStream {
 public:
  virtual ~SampleStream() = default;
  // Fills `out` with the next sample and returns true, or returns false at
  // the end of the stream. May throw SampleError for a bad sample.
  virtual bool Next(Sample& out, SampleContext& ctx) = 0;
};

class FEEDLINE_EXPORT IterableDataset {
 public:
  virtual ~IterableDataset() = default;
  // A stream over split `worker_id` of `num_workers` for `epoch`.
  virtual std::unique_ptr<SampleStream> Open(int worker_id, int num_workers,
                                             int64_t epoch) const = 0;
};

}  // namespace feedline

#endif  // FEEDLINE_ITERABLE_DATASET_H_
