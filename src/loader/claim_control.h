// ClaimControl: the Scheduler's verbs about the rows that map-style workers
// claim (a layer over SlotControl, WorkerControl and SchedulerState,
// scheduler_state.h): a worker's wait for work and its claim, the cost per
// row it measured, and the consumer's own claims, as the caller's thread
// (num_workers = 0) or under a waiting worker's lent id.
//
// Thread safety: *Locked functions REQUIRE the scheduler's mutex;
// NoteRowCost is safe without it.
#ifndef FEEDLINE_SRC_LOADER_CLAIM_CONTROL_H_
#define FEEDLINE_SRC_LOADER_CLAIM_CONTROL_H_

#include <cstdint>

#include "src/core/thread_annotations.h"
#include "src/loader/row_claims.h"
#include "src/loader/slot_control.h"

namespace feedline::internal {

class ClaimControl : public SlotControl {
 public:
  using SlotControl::SlotControl;

  // As worker `worker`: waits until it may claim rows and claims up to
  // `chunk` (RowClaims::Claim), or returns false once the workers stop.
  // Releases the mutex while it waits. Throws std::bad_alloc sizing a
  // slot. *wake_another: the work left is worth waking another worker for
  // (WakeAnotherWorker, once the mutex is released).
  bool NextTaskLocked(int worker, int64_t chunk, Task* task, bool* wake_another) REQUIRES(mu());
  // A worker measured `ns_per_row` loading a batch of `batch_rows`
  // (RowClaims::NoteRowCost); without the lock.
  void NoteRowCost(double ns_per_row, int64_t batch_rows) NO_THREAD_SAFETY_ANALYSIS;
  // The last cost per row a worker measured (0 before any).
  double row_ns_locked() const REQUIRES(mu()) { return claims_.row_ns(); }

  // As the consumer's thread (or, with an id, as that worker): claims up to
  // `chunk` rows.
  bool ClaimLocked(int64_t chunk, Task* task, int worker = -1) REQUIRES(mu()) {
    return claims_.Claim(chunk, task, worker);
  }
  // Lending a waiting worker's id to the consumer (RowClaims).
  int LendWaitingWorkerLocked() REQUIRES(mu()) { return claims_.LendWaitingWorker(); }
  void ReturnWorkerLocked(int worker) REQUIRES(mu()) { claims_.ReturnWorker(worker); }
  // Adds a slot if the caller holds every one (RowClaims).
  void GrowIfCallerHoldsEverySlotLocked() REQUIRES(mu()) {
    claims_.GrowIfCallerHoldsEverySlot();
  }

 protected:
  ~ClaimControl() = default;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_CLAIM_CONTROL_H_
