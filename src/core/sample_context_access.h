// SampleContextAccess: what the loader and the project's own tools do with a
// SampleContext that a dataset must not: point it at the next sample (one
// context per worker, its scratch buffers kept) and collect its stage times.
#ifndef FEEDLINE_SRC_CORE_SAMPLE_CONTEXT_ACCESS_H_
#define FEEDLINE_SRC_CORE_SAMPLE_CONTEXT_ACCESS_H_

#include <array>
#include <cstdint>

#include "feedline/sample_context.h"

namespace feedline::internal {

class SampleContextAccess {
 public:
  // The context now describes sample `index` of `epoch`; its generator is
  // made again on first use.
  static void Reset(SampleContext& ctx, int64_t epoch, int64_t index) { ctx.Reset(epoch, index); }
  // Returns and zeroes the stage times accumulated since the last call.
  static std::array<int64_t, kNumStages> DrainStageTimes(SampleContext& ctx) {
    return ctx.DrainStageTimes();
  }
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_CORE_SAMPLE_CONTEXT_ACCESS_H_
