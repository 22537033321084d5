// SchedulingMode: how one kind of dataset is scheduled. A map-style Dataset
// has a plan of batches that workers claim rows of (MapScheduling,
// map_scheduling.h); an IterableDataset has a stream per worker whose whole
// batches the consumer takes round-robin (IterableProducer,
// iterable_producer.h). The Engine holds one, chosen by the dataset it was
// given, and forwards the consumer's calls, the workers' bodies and the
// runtime controls to it; both build on the same Scheduler.
//
// Thread safety: Next and Reset are called by the one consumer thread,
// RunWorker by each worker, the controls from any thread; each takes the
// scheduler's lock itself.
#ifndef FEEDLINE_SRC_LOADER_SCHEDULING_MODE_H_
#define FEEDLINE_SRC_LOADER_SCHEDULING_MODE_H_

#include <optional>

#include "feedline/batch.h"
#include "src/loader/scheduler.h"
#include "src/loader/worker_pool.h"

namespace feedline::internal {

class SchedulingMode {
 public:
  using Clock = Scheduler::Clock;

  virtual ~SchedulingMode() = default;

  // The next batch; starts an epoch if none runs. nullopt at the end of the
  // epoch, or (with *pending set) when `deadline` passed first.
  virtual std::optional<Batch> Next(std::optional<Clock::time_point> deadline,
                                    bool* pending) = 0;
  // Abandons the running epoch (Engine::Reset).
  virtual void Reset() = 0;
  // What worker `worker` runs once its worker_init returned, until the
  // workers stop or `lane` is retired.
  virtual void RunWorker(int worker, WorkerLane& lane) = 0;

  // The runtime controls (Engine::SetActiveWorkers, SetSlotLimit), with
  // arguments already checked.
  virtual void SetActiveWorkers(int n) = 0;
  virtual int active_workers() const = 0;
  virtual void SetSlotLimit(int n) = 0;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_SCHEDULING_MODE_H_
