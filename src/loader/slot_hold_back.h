// SlotHoldBack: when a worker left without rows to claim should wait for a
// released slot instead of a new slot being made to start a later batch.
// Switched on for backends whose slots are shared memory that every worker
// maps (LoadBackendTraits::shared_slots: worker processes), with a plan of
// batches: such a slot costs a batch's memory in every worker for as long as
// the loader lives.
//
// When the consumer waits for its batches (the loader is the bottleneck),
// no batch ever waits for it, and a third slot only lets a worker that ran
// out of rows start the batch after next while the others finish the last
// rows of the one awaited: it saves that tail, and the consumer releases its
// previous batch as soon as it has the new one. So a new slot is not made
// then, past two slots, when the tail is under kTailShareLimit of a batch's
// work (TailIsCheap), and while a batch is in flight (its completion, or a
// released slot, ends the wait). For a consumer that finds its batches ready
// (prefetch at work), slots are made as before, up to the limit; slots past
// two are given back as they are released once the consumer has waited
// kWaitsBeforeGivingBack times in a row.
//
// The policy also follows the consumer (did it wait for its last batch, is
// it waiting now) and the batches' timing (tails and intervals), which it
// records whether switched on or not.
//
// Thread safety: none of its own; a part of RowClaims, which the Scheduler
// guards with its mutex (the pool it reads is guarded by the same one).
#ifndef FEEDLINE_SRC_LOADER_SLOT_HOLD_BACK_H_
#define FEEDLINE_SRC_LOADER_SLOT_HOLD_BACK_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "src/core/thread_annotations.h"
#include "src/loader/slot.h"
#include "src/loader/slot_pool.h"

namespace feedline::internal {

class SlotHoldBack {
 public:
  using Clock = std::chrono::steady_clock;

  // `pool`, whose slots it counts, must outlive the hold-back.
  SlotHoldBack(bool on, SlotPool* pool) : on_(on), pool_(pool) {}
  bool on() const { return on_; }

  // True if the next batch, of `batch_rows` rows, should wait for a released
  // slot. REQUIRES: an epoch runs with a batch left to bind and no batch
  // bound again after a timeout waiting (the caller checks).
  bool HoldsBack(size_t batch_rows, int active_workers, uint64_t generation) const;
  // When a worker held back looks again (the hold ends without a wake-up
  // when the awaited batch completes and the consumer keeps the batch it
  // held): `now` plus a short while.
  static Clock::time_point RecheckAt(Clock::time_point now);

  // A worker claimed `rows` rows: the size of a batch tail's pieces until
  // the tails are measured.
  void NoteClaim(int64_t rows) { last_claim_rows_ = rows; }
  // An epoch starts: the gap between epochs is no batch's time, and its
  // first batches are start-up.
  void NoteEpochStart();
  // A batch completed: its tail (from its last claim to now) and the time
  // since the completion before go into the averages TailIsCheap reads.
  void NoteCompletion(const Slot& slot);
  // The consumer found no batch ready and waits for one; or its TryNext
  // returned kPending at `now` (it may go on with other work).
  void NoteConsumerWaits();
  void NoteConsumerAway(Clock::time_point now);
  // The consumer took a batch of `batch_rows` rows, after waiting for it or
  // not: decides whether slots past two are given back as released.
  void NoteConsumerTook(size_t batch_rows, int active_workers);

 private:
  // The consumer found no batch ready and is waiting for one: in a wait, or
  // between TryNext calls that return kPending less than kPollGrace apart.
  bool ConsumerWaiting() const;
  // The tail a worker would sit out at a batch of `batch_rows` is under
  // kTailShareLimit of the time a batch takes: measured once batches have
  // completed (NoteCompletion), taken to be half a claim per worker before.
  bool TailIsCheap(size_t batch_rows, int active_workers) const;

  const bool on_;
  SlotPool* const pool_;
  int64_t last_claim_rows_ = 1;
  std::optional<Clock::time_point> last_completion_;
  int completions_seen_ = 0;  // this epoch
  double tail_s_ = 0;
  double batch_interval_s_ = 0;
  // Whether the consumer found no batch ready and waited, for the batch it
  // took last and since: the loader is the bottleneck.
  bool consumer_waited_for_last_ = false;
  bool consumer_waited_since_take_ = false;
  // When a TryNext of the consumer's last returned kPending (unset while it
  // waits, or once it asked again).
  std::optional<Clock::time_point> consumer_away_since_;
  int consecutive_waits_ = 0;  // batches the consumer waited for, in a row
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SLOT_HOLD_BACK_H_
