// What a LoaderState records about the loader it was taken from: the parts of
// the options and batch sampler that decide the batches, and a digest of one
// epoch's plan.
#ifndef FEEDLINE_SRC_LOADER_FINGERPRINT_H_
#define FEEDLINE_SRC_LOADER_FINGERPRINT_H_

#include <cstdint>
#include <string>

#include "feedline/batch_sampler.h"
#include "feedline/loader_options.h"
#include "feedline/loader_state.h"

namespace feedline::internal {

// Everything but num_batches and plan_hash, from the options and the batch
// sampler the loader uses. dataset_size < 0 for an IterableDataset.
LoaderFingerprint FingerprintOf(const LoaderOptions& options, const BatchSampler* batch_sampler,
                                int64_t dataset_size);

// A 64-bit digest of an epoch's indices and batch boundaries, in hex.
std::string PlanHash(const EpochPlan& plan);

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_FINGERPRINT_H_
