#include "feedline/sample_context.h"

#include <string>

#include "feedline/error.h"

namespace feedline {

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kRead: return "read";
    case Stage::kDecode: return "decode";
    case Stage::kTransform: return "transform";
    case Stage::kCollate: return "collate";
    case Stage::kCount: break;
  }
  return "?";
}

SampleContext::SampleContext(uint64_t seed, int64_t epoch, int64_t index, int worker_id)
    : seed_(seed),
      epoch_(epoch),
      index_(index),
      worker_id_(worker_id),
      rng_(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index)) {}

std::vector<uint8_t>& SampleContext::scratch(int slot) {
  if (slot < 0 || slot >= static_cast<int>(scratch_.size())) {
    throw Error("scratch slot must be in [0, " + std::to_string(kScratchSlots) + "), got " +
                std::to_string(slot));
  }
  return scratch_[static_cast<size_t>(slot)];
}

std::array<int64_t, kNumStages> SampleContext::DrainStageTimes() {
  std::array<int64_t, kNumStages> out = stage_ns_;
  stage_ns_.fill(0);
  return out;
}

}  // namespace feedline
