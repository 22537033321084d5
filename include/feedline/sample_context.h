// SampleContext: what a dataset knows about the sample it is producing.
//
// It carries the sample's identity (index, epoch, seed), its random generator
// Rng(seed, epoch, index) so augmentation does not depend on which worker runs
// it, per-worker scratch buffers that are reused between samples, and stage
// timers through which the dataset reports read / decode / transform time to
// the loader's statistics.
//
// Thread safety: one context per worker thread; not shared.
//
// Example:
//   void Get(int64_t i, Sample& out, SampleContext& ctx) const override {
//     std::vector<uint8_t>& bytes = ctx.scratch(0);
//     { auto t = ctx.Time(Stage::kRead); ReadFile(path(i), bytes); }
//     bool flip = ctx.rng().Bernoulli(0.5);
//     ...
//   }
#ifndef FEEDLINE_SAMPLE_CONTEXT_H_
#define FEEDLINE_SAMPLE_CONTEXT_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "feedline/export.h"
#include "feedline/rng.h"

namespace feedline {

enum class Stage : int { kRead = 0, kDecode, kTransform, kCollate, kCount };
FEEDLINE_EXPORT const char* StageName(Stage stage);  // "read", "decode", "transform", "collate"
constexpr int kNumStages = static_cast<int>(Stage::kCount);

namespace internal {
class SampleContextAccess;
}  // namespace internal

class FEEDLINE_EXPORT SampleContext {
 public:
  // A context for sample `index` of `epoch`; `worker_id` is -1 for the
  // caller's thread.
  SampleContext(uint64_t seed, int64_t epoch, int64_t index, int worker_id = -1);

  int64_t index() const { return index_; }
  int64_t epoch() const { return epoch_; }
  uint64_t seed() const { return seed_; }
  int worker_id() const { return worker_id_; }

  // The batch the loader is filling with this sample: the dataset indices
  // its sampler planned for it, in row order, this sample's among them
  // (as planned: a row replaced after a failure does not change it). Empty
  // when the sample is loaded alone (dataset[i], an IterableDataset). A
  // pure function of (seed, epoch, batch), whichever worker loads the
  // sample, so a dataset may draw from it (a mosaic's partners). Valid
  // while the sample loads.
  std::span<const int64_t> batch() const { return batch_; }

  // The sample's generator: Rng(seed, epoch, index). Made on first use, so
  // samples that draw nothing pay nothing.
  Rng& rng() {
    if (!rng_ready_) {
      rng_ = Rng(seed_, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index_));
      rng_ready_ = true;
    }
    return rng_;
  }

  // Scratch buffers: a dataset keeps its own bytes in slots
  // [0, kDatasetScratchSlots); the library's image pipeline
  // (vision::Pipeline::Run) uses the others, up to kScratchSlots.
  static constexpr int kScratchSlots = 8;
  static constexpr int kDatasetScratchSlots = 5;
  // Scratch buffer number `slot` (0..kScratchSlots-1) of this worker; kept
  // between samples. Throws Error for another number.
  std::vector<uint8_t>& scratch(int slot);

  // Adds `nanoseconds` to `stage`.
  void AddStageTime(Stage stage, int64_t nanoseconds) {
    stage_ns_[static_cast<int>(stage)] += nanoseconds;
  }
  // Time accumulated per stage since the context was made (or the loader
  // collected it).
  int64_t stage_ns(Stage stage) const { return stage_ns_[static_cast<int>(stage)]; }

  // Scoped timer: adds the time until its destruction to a stage.
  class Timer {
   public:
    Timer(SampleContext* ctx, Stage stage)
        : ctx_(ctx), stage_(stage), start_(std::chrono::steady_clock::now()) {}
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    ~Timer() {
      ctx_->AddStageTime(stage_, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start_)
                                     .count());
    }

   private:
    SampleContext* ctx_;
    Stage stage_;
    std::chrono::steady_clock::time_point start_;
  };
  [[nodiscard]] Timer Time(Stage stage) { return Timer(this, stage); }

  // Counts an image decoded (whole or in part) for the loader's statistics
  // (StatsSnapshot::images_decoded): the vision pipeline counts its own.
  void CountImagesDecoded(int64_t n = 1) { images_decoded_ += n; }
  int64_t images_decoded() const { return images_decoded_; }

 private:
  // The loader reuses one context per worker (internal::SampleContextAccess).
  friend class internal::SampleContextAccess;

  // Points the context at another sample.
  void Reset(int64_t epoch, int64_t index) {
    epoch_ = epoch;
    index_ = index;
    rng_ready_ = false;
  }
  // Returns and zeroes the accumulated stage times.
  std::array<int64_t, kNumStages> DrainStageTimes();
  // Returns and zeroes the count of images decoded.
  int64_t DrainImagesDecoded() {
    const int64_t n = images_decoded_;
    images_decoded_ = 0;
    return n;
  }

  uint64_t seed_;
  int64_t epoch_;
  int64_t index_;
  int worker_id_;
  Rng rng_;
  bool rng_ready_ = true;
  std::span<const int64_t> batch_;
  std::array<int64_t, kNumStages> stage_ns_{};
  int64_t images_decoded_ = 0;
  std::array<std::vector<uint8_t>, kScratchSlots> scratch_;
};

}  // namespace feedline

#endif  // FEEDLINE_SAMPLE_CONTEXT_H_
