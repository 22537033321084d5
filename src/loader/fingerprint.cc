#include "src/loader/fingerprint.h"

#include <cstdio>

#include "feedline/rng.h"
#include "feedline/sampler.h"

namespace feedline::internal {
namespace {

const char* SamplerKind(const Sampler* sampler, bool shuffle) {
  if (sampler == nullptr) return shuffle ? "random" : "sequential";
  if (dynamic_cast<const SequentialSampler*>(sampler)) return "sequential";
  if (dynamic_cast<const RandomSampler*>(sampler)) return "random";
  if (dynamic_cast<const SubsetRandomSampler*>(sampler)) return "subset_random";
  if (dynamic_cast<const WeightedRandomSampler*>(sampler)) return "weighted_random";
  if (dynamic_cast<const ClassBalancedSampler*>(sampler)) return "class_balanced";
  return "custom";
}

}  // namespace

LoaderFingerprint FingerprintOf(const LoaderOptions& options, const BatchSampler* batch_sampler,
                                int64_t dataset_size) {
  LoaderFingerprint f;
  f.dataset_size = dataset_size;
  f.seed = std::to_string(options.seed);
  f.num_replicas = 1;
  f.rank = 0;
  if (!options.batch_sampler) {
    f.sampler = SamplerKind(options.sampler.get(), options.shuffle);
    f.batch_size = options.batch_size;
    f.drop_last = options.drop_last ? 1 : 0;
    return f;
  }
  if (const auto* d = dynamic_cast<const DistributedBatchSampler*>(batch_sampler)) {
    f.sampler = "distributed";
    f.batch_size = d->batch_size();
    f.drop_last = d->drop_last() ? 1 : 0;
    f.num_replicas = d->num_replicas();
    f.rank = d->rank();
  } else if (dynamic_cast<const DynamicBatchSampler*>(batch_sampler)) {
    f.sampler = "dynamic";
    f.batch_size = 0;
  } else {
    f.sampler = "custom";
    f.batch_size = 0;
  }
  return f;
}

std::string PlanHash(const EpochPlan& plan) {
  uint64_t h = MixSeed(0, static_cast<uint64_t>(plan.indices.size()));
  for (int64_t index : plan.indices) h = MixSeed(h, static_cast<uint64_t>(index));
  for (int64_t offset : plan.offsets) h = MixSeed(h, static_cast<uint64_t>(offset) ^ 0x6f6666ull);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace feedline::internal
