#include "src/loader/claim_control.h"

namespace feedline::internal {

bool ClaimControl::NextTaskLocked(int worker, int64_t chunk, Task* task, bool* wake_another) {
  while (true) {
    // While the consumer borrows this worker's id (it loads rows while it
    // waits) the worker claims nothing. A worker the hold-back keeps waiting
    // looks again after a while (RowClaims::HoldBackCheck): the consumer may
    // keep the batch it holds.
    while (!(WorkersStoppingLocked() || (claims_.HasWork(worker) && !roster_.lent(worker)))) {
      roster_.SetWaiting(worker, true);
      lock_->wakeups.Wait(mu(), worker, claims_.HoldBackCheck());
      roster_.SetWaiting(worker, false);
    }
    if (WorkersStoppingLocked()) return false;
    if (claims_.Claim(chunk, task, worker)) {
      *wake_another = claims_.WorthWakingAnother(worker);
      return true;
    }
  }
}

// Without the lock: RowClaims::NoteRowCost writes only atomics; the
// analysis cannot see that through the guarded member.
void ClaimControl::NoteRowCost(double ns_per_row, int64_t batch_rows) {
  claims_.NoteRowCost(ns_per_row, batch_rows);
}

}  // namespace feedline::internal
