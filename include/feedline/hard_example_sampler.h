// HardExampleSampler: draws the samples the model currently gets wrong more
// often, fed by the training loop's per-sample losses.
//
// The rule (docs/samplers.md):
//   - Each sample has a score, an exponential moving average of its losses:
//     the first loss reported for it sets the score, later ones move it,
//     score = decay * score + (1 - decay) * loss.
//   - A sample never reported scores like the highest-scoring sample seen,
//     so samples not yet trained on are drawn early; before any update every
//     sample scores the same (uniform draws).
//   - Index i is drawn with probability
//       p_i = floor / n + (1 - floor) * score_i / sum(scores)
//     (uniform when every score is 0): loss-proportional, with a share
//     `floor` of the draws spread evenly, so every sample keeps a
//     probability of at least floor / n and none starves.
//   - An epoch is num_samples independent draws (with replacement) from
//     Rng(seed, epoch), with the probabilities in force when the loader plans
//     that epoch, i.e. at its start: losses reported during epoch e shape
//     epoch e + 1. A small num_samples re-plans often (num_samples = 20
//     batches re-weights every 20 batches).
//
// Deterministic: the same seed and the same sequence of Update calls (before
// each epoch is planned) give the same epochs. Exact resume: state() taken
// with the loader's state and restored with it gives the same epochs; the
// probabilities an epoch was planned with are part of the state, so a
// restored, half-done epoch is re-planned identically. The state is O(n).
//
// Thread safety: Update, state, Restore and Probabilities may be called from
// any thread while the loader reads the sampler (a mutex guards the scores).
//
// Example:
//   auto sampler = std::make_shared<HardExampleSampler>(dataset->size(), /*seed=*/1);
//   options.sampler = sampler;
//   DataLoader loader(dataset, options);
//   for (const Batch& batch : loader) {
//     std::vector<double> losses = Train(batch);  // one loss per row
//     sampler->Update(batch.indices(), losses);
//   }
#ifndef FEEDLINE_HARD_EXAMPLE_SAMPLER_H_
#define FEEDLINE_HARD_EXAMPLE_SAMPLER_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "feedline/export.h"
#include "feedline/sampler.h"

namespace feedline {

struct FEEDLINE_EXPORT HardExampleOptions {
  std::optional<int64_t> num_samples;  // draws per epoch; default n
  double decay = 0.5;                  // weight of the old score, in [0, 1)
  double floor = 0.1;                  // share of draws spread evenly, in (0, 1]
};

class FEEDLINE_EXPORT HardExampleSampler : public Sampler {
 public:
  using Options = HardExampleOptions;

  // Everything needed to continue exactly (O(n)).
  struct State {
    std::vector<double> scores;   // per sample (0 where not seen)
    std::vector<uint8_t> seen;    // 1 where a loss was reported
    int64_t planned_epoch = -1;   // the last epoch planned, -1 if none
    std::vector<double> planned;  // the probabilities it was planned with
  };

  // Throws Error if n < 1, num_samples < 1, or decay or floor is out of range
  // (the message names the option).
  HardExampleSampler(int64_t n, uint64_t seed, Options options = {});

  int64_t size() const override { return num_samples_; }
  // The draws of `epoch`. The first call for an epoch fixes its
  // probabilities; asking again for that epoch gives the same draws.
  std::vector<int64_t> Indices(int64_t epoch) const override;

  // Reports one loss per index (indices[k] had losses[k]), applied in order.
  // Throws Error (IndexError for an index) naming the argument and entry if
  // the sizes differ, an index is outside [0, n) or a loss is not finite or
  // negative; then nothing is applied.
  void Update(std::span<const int64_t> indices, std::span<const double> losses);

  // The probabilities the next epoch planned would use.
  std::vector<double> Probabilities() const;

  State state() const;
  // Throws Error naming the field if `state` does not fit this sampler (sizes,
  // non-finite or negative values); then nothing changes.
  void Restore(const State& state);

  int64_t num_items() const { return n_; }

 private:
  std::vector<double> ProbabilitiesLocked() const;

  int64_t n_;
  uint64_t seed_;
  int64_t num_samples_;
  double decay_;
  double floor_;

  mutable std::mutex mu_;
  std::vector<double> scores_;   // GUARDED_BY(mu_)
  std::vector<uint8_t> seen_;    // GUARDED_BY(mu_)
  mutable int64_t planned_epoch_ = -1;       // GUARDED_BY(mu_)
  mutable std::vector<double> planned_;      // GUARDED_BY(mu_)
};

}  // namespace feedline

#endif  // FEEDLINE_HARD_EXAMPLE_SAMPLER_H_
