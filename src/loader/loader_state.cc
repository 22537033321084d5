#include "feedline/loader_state.h"

#include <string>

namespace feedline {
namespace {

std::string Differs(const char* field, const std::string& recorded, const std::string& actual) {
  return std::string(field) + ": the state was taken with " + recorded + ", this loader has " +
         actual;
}

// An unset number (-1) matches anything.
bool NumbersDiffer(int64_t recorded, int64_t actual) {
  return recorded >= 0 && actual >= 0 && recorded != actual;
}

bool StringsDiffer(const std::string& recorded, const std::string& actual) {
  return !recorded.empty() && !actual.empty() && recorded != actual;
}

}  // namespace

std::string FingerprintDifference(const LoaderFingerprint& recorded,
                                  const LoaderFingerprint& actual) {
  // The order puts the likeliest cause first: a different dataset or seed
  // explains a different plan, so the plan hash comes last.
  const struct {
    const char* name;
    int64_t recorded, actual;
  } numbers[] = {
      {"dataset_size", recorded.dataset_size, actual.dataset_size},
      {"batch_size", recorded.batch_size, actual.batch_size},
      {"drop_last", recorded.drop_last, actual.drop_last},
      {"num_replicas", recorded.num_replicas, actual.num_replicas},
      {"rank", recorded.rank, actual.rank},
  };
  for (const auto& n : numbers) {
    if (NumbersDiffer(n.recorded, n.actual)) {
      return Differs(n.name, std::to_string(n.recorded), std::to_string(n.actual));
    }
  }
  if (StringsDiffer(recorded.seed, actual.seed)) {
    return Differs("seed", recorded.seed, actual.seed);
  }
  if (StringsDiffer(recorded.sampler, actual.sampler)) {
    return Differs("sampler", "'" + recorded.sampler + "'", "'" + actual.sampler + "'");
  }
  if (NumbersDiffer(recorded.num_batches, actual.num_batches)) {
    return Differs("num_batches", std::to_string(recorded.num_batches),
                   std::to_string(actual.num_batches));
  }
  if (StringsDiffer(recorded.plan_hash, actual.plan_hash)) {
    return Differs("plan_hash", recorded.plan_hash,
                   actual.plan_hash + " (the epoch's batches differ: another sampler order, "
                                      "dataset or batch sampler)");
  }
  return "";
}

}  // namespace feedline
