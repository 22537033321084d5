#include "src/loader/slot_hold_back.h"

namespace feedline::internal {
namespace {

// The share of a batch's loading time a worker may sit out at each batch's
// tail instead of a new slot being made (the estimate: TailIsCheap). 2
// workers claiming single rows of equal cost from a 64-row batch: 1.6%,
// which leaves room for rows that vary (decode times of JPEGs of different
// sizes, a busy machine's scheduling).
constexpr double kTailShareLimit = 0.03;
// The weight of a batch in the averages of batch tails and intervals behind
// TailIsCheap (about the last 8 batches), and the batches of each epoch left
// out of them: the first ones are start-up (a worker process's first
// imports and allocations, files seen for the first time).
constexpr double kBatchTimingWeight = 1.0 / 8;
constexpr int kWarmUpBatches = 2;
// A consumer whose TryNext returned kPending longer ago than this, and has
// not asked again, went on with other work: it is not waiting. Python's
// binding waits in 100 ms TryNext slices and asks again within microseconds.
constexpr auto kPollGrace = std::chrono::milliseconds(1);
// How often a held-back worker looks again.
constexpr auto kHoldBackRecheck = std::chrono::milliseconds(2);
// Slots always made when needed, whatever the hold-back: one for the
// consumer, one to fill.
constexpr int kSlotsBeforeHoldingBack = 2;
// Slots made while the consumer was busy (prefetch) are given back, as they
// are released, once it has waited for this many batches in a row: a
// moment of jitter does not keep a third slot for the rest of the run, and
// a loop that alternates between busy and waiting makes and frees one at
// most once per this many batches.
constexpr int kWaitsBeforeGivingBack = 8;

}  // namespace

bool SlotHoldBack::HoldsBack(size_t batch_rows, int active_workers, uint64_t generation) const {
  if (!on_) return false;
  // A free slot is taken: the hold-back is only about making one.
  if (pool_->in_use_locked() < pool_->size_locked()) return false;
  if (pool_->size_locked() < kSlotsBeforeHoldingBack) return false;
  if (!consumer_waited_for_last_ && !ConsumerWaiting()) return false;
  if (!TailIsCheap(batch_rows, active_workers)) return false;
  // Only while a batch is being loaded, or is ready for a consumer that
  // waits (the worker that completed it asks for more before the consumer
  // has woken up): what ends the hold is on its way.
  for (const auto& slot : pool_->slots_locked()) {
    if (slot->generation != generation) continue;
    if (slot->state == SlotState::kFilling) return true;
    if (slot->state == SlotState::kReady && ConsumerWaiting()) return true;
  }
  return false;
}

SlotHoldBack::Clock::time_point SlotHoldBack::RecheckAt(Clock::time_point now) {
  return now + kHoldBackRecheck;
}

bool SlotHoldBack::TailIsCheap(size_t batch_rows, int active_workers) const {
  if (tail_s_ > 0 && batch_interval_s_ > 0) {
    // Measured: a worker that runs out of rows waits, on average, about half
    // of the time from the batch's last claim to its completion.
    return 0.5 * tail_s_ <= kTailShareLimit * batch_interval_s_;
  }
  // Before that, the rows are taken to cost the same: half a claim per worker.
  const double tail = 0.5 * static_cast<double>(last_claim_rows_) * active_workers;
  return tail <= kTailShareLimit * static_cast<double>(batch_rows);
}

void SlotHoldBack::NoteEpochStart() {
  last_completion_.reset();
  completions_seen_ = 0;
}

void SlotHoldBack::NoteCompletion(const Slot& slot) {
  const Clock::time_point now = Clock::now();
  if (last_completion_ && ++completions_seen_ > kWarmUpBatches) {
    const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    const double tail = seconds(now - slot.fully_claimed);
    const double interval = seconds(now - *last_completion_);
    const bool first = tail_s_ <= 0;
    tail_s_ = first ? tail : tail_s_ + (tail - tail_s_) * kBatchTimingWeight;
    batch_interval_s_ =
        first ? interval : batch_interval_s_ + (interval - batch_interval_s_) * kBatchTimingWeight;
  }
  last_completion_ = now;
}

void SlotHoldBack::NoteConsumerWaits() {
  consumer_waited_since_take_ = true;
  consumer_away_since_.reset();
}

void SlotHoldBack::NoteConsumerAway(Clock::time_point now) { consumer_away_since_ = now; }

void SlotHoldBack::NoteConsumerTook(size_t batch_rows, int active_workers) {
  const bool waited = ConsumerWaiting();
  consumer_waited_for_last_ = waited;
  consecutive_waits_ = waited ? consecutive_waits_ + 1 : 0;
  const bool give_back = on_ && consecutive_waits_ >= kWaitsBeforeGivingBack &&
                         TailIsCheap(batch_rows, active_workers);
  pool_->set_keep_on_release_locked(give_back ? kSlotsBeforeHoldingBack : 0);
  consumer_waited_since_take_ = false;
  consumer_away_since_.reset();
}

bool SlotHoldBack::ConsumerWaiting() const {
  if (!consumer_waited_since_take_) return false;
  return !consumer_away_since_ || Clock::now() - *consumer_away_since_ < kPollGrace;
}

}  // namespace feedline::internal
