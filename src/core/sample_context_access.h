// SampleContextAccess: what the loader and the project's own tools do with a
// SampleContext that a dataset must not: point it at the next sample (one
// context per worker, its scratch buffers kept) and collect its stage times.
#ifndef FEEDLINE_SRC_CORE_SAMPLE_CONTEXT_ACCESS_H_
#define FEEDLINE_SRC_CORE_SAMPLE_CONTEXT_ACCESS_H_

#include <array>
#include <cstdint>
#include <span>

#include "feedline/sample_context.h"

namespace feedline::internal {

class SampleContextAccess {
 public:
  // The context now describes sample `index` of `epoch`; its generator is
  // made again on first use.
  static void Reset(SampleContext& ctx, int64_t epoch, int64_t index) { ctx.Reset(epoch, index); }
  // The batch the next samples belong to (SampleContext::batch); empty for
  // samples loaded alone. `batch` must outlive their loads.
  static void SetBatch(SampleContext& ctx, std::span<const int64_t> batch) { ctx.batch_ = batch; }
  // Returns and zeroes the stage times accumulated since the last call.
  static std::array<int64_t, kNumStages> DrainStageTimes(SampleContext& ctx) {
    return ctx.DrainStageTimes();
  }
  static int64_t DrainImagesDecoded(SampleContext& ctx) { return ctx.DrainImagesDecoded(); }
};

// Shows `batch` as ctx's batch while it lives, then the one before: for a
// dataset that hands its samples to another under other indices (Subset,
// Concat), which sees the batch in its own indices.
class ScopedBatch {
 public:
  ScopedBatch(SampleContext& ctx, std::span<const int64_t> batch)
      : ctx_(ctx), before_(ctx.batch()) {
    SampleContextAccess::SetBatch(ctx_, batch);
  }
  ~ScopedBatch() { SampleContextAccess::SetBatch(ctx_, before_); }
  ScopedBatch(const ScopedBatch&) = delete;
  ScopedBatch& operator=(const ScopedBatch&) = delete;

 private:
  SampleContext& ctx_;
  std::span<const int64_t> before_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_CORE_SAMPLE_CONTEXT_ACCESS_H_
