// RowClaims: which rows a worker loads next.
//
// Batches of the epoch's plan are bound to free slots in order (a free slot
// is reused before another is created, up to the slot limit); workers claim
// the bound batch's rows in chunks (Task). Batches bound again after a
// timeout (Rebind) are claimed first. With LoaderOptions::batch_per_worker,
// worker w binds and loads batches w, w + n, w + 2n, ... whole, at most
// prefetch_factor undelivered. With a backend whose rows each cost a round
// trip (LoadsRowsTogether), claims hold several rows. With a backend of
// shared slots, the hold-back (SlotHoldBack) may keep the next batch waiting
// for a released slot rather than a new one.
//
// A consumer that would wait for cheap rows claims them as a waiting worker
// whose id it borrows (LendWaitingWorker, WorkerRoster).
//
// Thread safety: a part of the Scheduler, a member GUARDED_BY its mutex:
// clang checks that every call holds it. The slot pool, roster and cursor it
// reads are the Scheduler's parts too, under the same lock.
#ifndef FEEDLINE_SRC_LOADER_ROW_CLAIMS_H_
#define FEEDLINE_SRC_LOADER_ROW_CLAIMS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "feedline/loader_options.h"
#include "src/core/thread_annotations.h"
#include "src/loader/epoch_cursor.h"
#include "src/loader/slot.h"
#include "src/loader/slot_hold_back.h"
#include "src/loader/slot_layout.h"
#include "src/loader/slot_pool.h"
#include "src/loader/worker_pool.h"
#include "src/loader/worker_roster.h"

namespace feedline::internal {

// A range of rows of one slot handed to a worker.
struct Task {
  Slot* slot = nullptr;
  int64_t begin = 0;
  int64_t end = 0;
  uint64_t generation = 0;
};

class RowClaims {
 public:
  using Clock = std::chrono::steady_clock;

  // `map_style`: the epoch has a plan (a batch sampler); a stream's workers
  // bind their own batches (IterableProducer). `pool`, `wakeups`, `cursor`,
  // `roster`,
  // `layout` and `generation` (the scheduler's) must outlive the claims.
  // `round_trip_claims`: rows cost a round trip each unless claimed
  // together; `hold_back`: SlotHoldBack is on.
  RowClaims(const LoaderOptions& options, bool map_style, bool round_trip_claims, bool hold_back,
            SlotPool* pool, WorkerWakeups* wakeups, const EpochCursor* cursor,
            WorkerRoster* roster,
            const SlotLayout* layout, const std::atomic<uint64_t>* generation);

  // An epoch starts at batch `first_batch` (no claim is open).
  void Start(int64_t first_batch);
  // The epoch is abandoned: rows nobody claimed will not be loaded.
  void DropUnclaimed();

  // True if `worker` (-1: the consumer, or a thread without an id) may claim
  // rows now: an active worker, and a batch to claim from or a slot to bind
  // the next one to.
  bool HasWork(int worker) const;
  // Claims up to `chunk` rows: of a batch bound again after a timeout
  // first, else of the open batch, else binds the next batch to a free
  // slot. False if there is nothing to claim. Throws std::bad_alloc sizing
  // a slot (which stays usable). With batch_per_worker, `worker` claims
  // only its own batches, whole.
  bool Claim(int64_t chunk, Task* task, int worker = -1);
  // After `worker` claimed: whether the work left is worth waking another
  // worker for. Any work is, except with cheap batches (see
  // WorkerWakeups::set_batch_release_wakes), where one more batch is loaded
  // by this worker sooner than another could wake up for it: it takes two.
  bool WorthWakingAnother(int worker) const;
  // A load of row `late.row` ran past the timeout: the slot is given up (it
  // returns to the pool when the late load does) and its batch is bound
  // again to a fresh slot, that row failed ("timeout"). Throws
  // std::bad_alloc if the batch cannot be bound again.
  void Rebind(const LateLoad& late);
  // A slot given up by Rebind came back.
  void ReleaseOrphan(Slot* slot);

  // While the hold-back keeps workers from claiming: they then wait at
  // most until this time, and look again (the consumer may keep the batch
  // it holds).
  std::optional<Clock::time_point> HoldBackCheck() const;
  SlotHoldBack& hold_back() { return hold_back_; }

  // A worker measured `ns_per_row` (its moving average) loading a batch of
  // `rows`: batches that load in microseconds get their released slots a
  // few at a time (WorkerWakeups::set_batch_release_wakes).
  void NoteRowCost(double ns_per_row, int64_t rows);
  // The last cost per row a worker measured (0 before any).
  double row_ns() const { return row_ns_.load(std::memory_order_relaxed); }

  // Lends the id of an active worker that waits for work while there is
  // work to claim; -1 if none.
  int LendWaitingWorker();
  // Gives the id back; wakes a worker if the lent one was woken meanwhile
  // (and work is left and a worker waits).
  void ReturnWorker(int worker);

  // `slot` goes to the consumer: with batch_per_worker, its owner may bind
  // another.
  void NoteDelivered(Slot* slot);
  // Adds slots when the caller holds all of them (list(loader)), or, with
  // batch_per_worker, when the awaited batch has no slot and none is free,
  // since no batch could be loaded otherwise.
  void GrowIfCallerHoldsEverySlot();

 private:
  void Bind(Slot* slot, int64_t batch_index);
  // Accounts a slot's unclaimed rows as finished (the slot will not be
  // loaded further) and returns it to the pool if nothing else is pending.
  void DropUnclaimedOf(Slot* slot);
  // batch_per_worker: `worker`'s own batch to claim, bound now if needed;
  // null if it has none (its next is past the end, or over its quota).
  Slot* OwnBatch(int worker);
  bool HasOwnWork(int worker) const;
  // True if batch `batch_index` of the running epoch is being loaded or ready.
  bool Bound(int64_t batch_index) const;
  // True if the next batch should wait for a released slot instead of a new
  // one being made for it (SlotHoldBack).
  bool HoldsBackNewSlot() const;

  const LoaderOptions& options_;
  const bool map_style_;
  SlotPool* const pool_;
  WorkerWakeups* const wakeups_;
  const EpochCursor* const cursor_;
  WorkerRoster* const roster_;
  const SlotLayout* const layout_;
  const std::atomic<uint64_t>* const generation_;

  int64_t next_bind_ = 0;  // next batch to bind to a slot
  // The bound batch whose rows are being claimed.
  Slot* open_ = nullptr;
  // Batches bound again after a timeout, whose rows are claimed before the
  // open batch's.
  std::vector<Slot*> retry_;
  int orphaned_slots_ = 0;  // slots waiting for a late load to return
  // batch_per_worker: per worker, the next batch it binds, the batch it is
  // loading (null when none) and its batches bound but not yet delivered.
  const bool batch_per_worker_;
  std::vector<int64_t> own_next_;
  std::vector<Slot*> own_open_;
  std::vector<int> own_undelivered_;
  // Each row costs a round trip unless several go together
  // (LoadsRowsTogether): claims then hold at least
  // claim_policy::RoundTripChunk rows.
  const bool round_trip_claims_;
  std::atomic<double> row_ns_{0};
  SlotHoldBack hold_back_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_ROW_CLAIMS_H_
