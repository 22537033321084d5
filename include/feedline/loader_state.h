// LoaderState: where a DataLoader's iteration stands, and what that position
// belongs to, so that a checkpoint resumes exactly or is refused.
//
// A state is small (O(1) in the dataset size) and plain: numbers and short
// strings. DataLoader::state() fills every field; DataLoader::Restore(state)
// continues from (epoch, next_batch) and first checks each recorded field
// against the loader it is given to, throwing Error that names the first
// field that differs. Fields left at their "unset" value (a state written by
// hand, LoaderState{epoch, next_batch}) are not checked.
//
// Example (checkpoint inside the loop, resume in a new process):
//   for (const Batch& batch : loader) {
//     Train(batch);
//     if (time_to_checkpoint) Save(loader.state());
//   }
//   ...
//   DataLoader loader(dataset, same_options);
//   loader.Restore(Load());
//   for (const Batch& batch : loader) Train(batch);  // the rest of that epoch
//   for (const Batch& batch : loader) Train(batch);  // the next epoch
#ifndef FEEDLINE_LOADER_STATE_H_
#define FEEDLINE_LOADER_STATE_H_

#include <cstdint>
#include <string>

#include "feedline/export.h"

namespace feedline {

// What must be the same for a position to mean the same batches.
struct FEEDLINE_EXPORT LoaderFingerprint {
  // Unset values: -1 for numbers, "" for strings (not checked).
  int64_t dataset_size = -1;
  std::string seed;          // decimal: the full uint64 range, safe in JSON
  std::string sampler;       // "sequential", "random", "distributed", ... or "custom"
  int64_t batch_size = -1;   // 0 when a custom batch sampler decides
  int64_t drop_last = -1;    // 0 or 1
  int64_t num_replicas = -1; // 1 unless a DistributedBatchSampler splits the data
  int64_t rank = -1;
  int64_t num_batches = -1;  // batches of `epoch`
  std::string plan_hash;     // hex digest of the epoch's batches (indices and offsets)
};

// With a DistributedBatchSampler: what all ranks consumed of the state's epoch,
// from which a job of another world size continues it (docs/distributed.md).
// Unset values: -1 for numbers, "" for strings.
struct FEEDLINE_EXPORT GlobalPosition {
  int64_t position = -1;     // samples of the epoch's global order consumed over all ranks
  int64_t epoch_start = -1;  // where the epoch began (> 0 when it was itself resumed)
  int64_t shuffle = -1;      // 0 or 1: the sampler's, which the global order depends on
  std::string seed;          // decimal: the sampler's seed
};

struct FEEDLINE_EXPORT LoaderState {
  LoaderState() = default;
  // A position written by hand: its fingerprint is unset, so not checked.
  LoaderState(int64_t epoch_, int64_t next_batch_) : epoch(epoch_), next_batch(next_batch_) {}

  int64_t epoch = 0;       // the epoch the next batch belongs to
  int64_t next_batch = 0;  // batches of `epoch` already delivered
  LoaderFingerprint fingerprint;
  // Set by DataLoader::state() when a DistributedBatchSampler splits the data.
  // Restore with another num_replicas or rank then continues the epoch from
  // it: every sample no rank had consumed is seen once over the new ranks.
  GlobalPosition global;
};

// "" when every field set in both `recorded` and `actual` is equal; otherwise
// a message naming the first difference ("seed: the state was taken with 7,
// this loader has 8").
FEEDLINE_EXPORT std::string FingerprintDifference(const LoaderFingerprint& recorded,
                                                  const LoaderFingerprint& actual);

}  // namespace feedline

#endif  // FEEDLINE_LOADER_STATE_H_
