// MultiRowDataset: a dataset whose rows each cost a round trip to somewhere
// else (worker processes: a socket message and two wake-ups), and which can
// load several rows in one round trip. The BatchFiller hands it a claim's
// rows at once; the Scheduler sizes such claims to several rows
// (Scheduler::set_round_trip_claims), so that the round trip is paid once per
// claim instead of once per row.
//
// The rows, their order, their contexts and so their contents are exactly
// those of loading them one by one with Get: only how many cross per message
// changes.
//
// Thread safety: as Dataset::Get (from the loader's worker threads, each
// under its own worker id).
#ifndef FEEDLINE_SRC_LOADER_MULTI_ROW_DATASET_H_
#define FEEDLINE_SRC_LOADER_MULTI_ROW_DATASET_H_

#include <cstdint>
#include <exception>
#include <span>

#include "feedline/sample.h"
#include "feedline/sample_context.h"

namespace feedline::internal {

// One row of a multi-row load: sample `index` into `*out` (cleared, and
// bound to its batch row, by the caller). `error` holds what Get would have
// thrown for it, or is null.
struct RowLoad {
  int64_t index = 0;
  Sample* out = nullptr;
  std::exception_ptr error;
};

class MultiRowDataset {
 public:
  virtual ~MultiRowDataset() = default;
  // Loads every row of `rows` as Get(row.index, *row.out, ctx) would, with
  // ctx's seed and worker id, epoch `epoch` and context index row.index; a
  // row that fails gets its `error` and fails alone. Returns false, with no
  // row to be trusted, when the rows could not be loaded together (the
  // worker process died meanwhile): the caller then loads them one by one
  // with Get, which finds out which row killed it.
  virtual bool GetRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx) const = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_MULTI_ROW_DATASET_H_
