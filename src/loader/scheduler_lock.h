// SchedulerLock: the mutex that guards a loader's scheduling state, and the
// wake-ups of the workers that wait under it.
//
// The Scheduler makes it and guards its parts with it (scheduler.h). It is
// shared, not a plain member, because the SlotPool keeps it too: a Batch
// handle may outlive its loader, and the last one gives its slot back under
// this lock (SlotPool::Release), waking the workers that wait for a free
// slot. A released slot and new work must be seen under one lock by the
// workers that wait for either, hence one lock for both.
#ifndef FEEDLINE_SRC_LOADER_SCHEDULER_LOCK_H_
#define FEEDLINE_SRC_LOADER_SCHEDULER_LOCK_H_

#include "src/core/mutex.h"
#include "src/loader/worker_wakeups.h"

namespace feedline::internal {

struct SchedulerLock {
  Mutex mu;
  // Where the workers wait, under mu, for work or a free slot.
  WorkerWakeups wakeups;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SCHEDULER_LOCK_H_
