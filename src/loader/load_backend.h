// LoadBackend: where a loader's samples load, as the engine sees it, and the
// only way they load. The engine is given one at construction
// (src/loader_factory decides which):
//   - ThreadLoadBackend (thread_load_backend.h): the engine's worker threads
//     call Dataset::Get themselves; slots live on the heap;
//   - ProcessLoadBackend (src/process/process_load_backend.h): each worker
//     thread forwards its rows to a worker process, which writes them into
//     slots in shared memory that every process maps.
// Its verbs: start a worker (before the worker loads anything), and load a
// span of rows (one row is a span of one). Besides, the engine asks it for
// what differs between backends: the allocator of the batch slots, stopping
// the samples in flight when an epoch is abandoned, and how many workers
// were started again after one died. Its traits switch on the scheduling
// that only pays off for one of them.
//
// Thread safety: every call from any thread; AbandonInFlight with the
// loader's lock held (it must not block or call back into the loader).
#ifndef FEEDLINE_SRC_LOADER_LOAD_BACKEND_H_
#define FEEDLINE_SRC_LOADER_LOAD_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>

#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "src/loader/slot_allocator.h"

namespace feedline::internal {

// One row of a multi-row load: sample `index` into `*out` (cleared, and
// bound to its batch row, by the caller). `error` holds what Get would have
// thrown for it, or is null.
struct RowLoad {
  int64_t index = 0;
  Sample* out = nullptr;
  std::exception_ptr error;
};

struct LoadBackendTraits {
  // Batch slots come from slot_allocator() and every worker maps them: a
  // slot costs memory in every worker for as long as the loader lives, so a
  // slot more is made only ahead of a busy consumer, not for a batch's
  // tail (SlotHoldBack).
  bool shared_slots = false;
  // Each row costs a round trip (a socket message and two wake-ups): claims
  // hold several rows, loaded together by LoadRows.
  bool round_trip_rows = false;
  // Workers are processes: starting or stopping one forks or kills a
  // process, so the tuner changes their count on longer, steadier evidence
  // (TunerConfig::costly_workers).
  bool costly_workers = false;
  // StartWorker does something (a worker_init runs, a process starts): a
  // worker loads nothing before it returned, an epoch ends only once every
  // start returned (it may fail), and what it set up belongs to that
  // worker, so no other thread loads under the worker's id.
  bool starts_workers = false;
};

class LoadBackend {
 public:
  virtual ~LoadBackend() = default;

  virtual LoadBackendTraits traits() const = 0;
  // Where batch slots are allocated.
  virtual std::shared_ptr<SlotAllocator> slot_allocator() const = 0;
  // Makes worker `worker` ready to load: runs LoaderOptions::worker_init on
  // the calling thread (threads) or starts the worker's process, whose
  // child runs it (processes). Called by the thread that serves `worker`
  // next, before its first load (again after a timeout replaced it). Throws
  // what ends the epoch: WorkerInitError for a worker_init that failed, an
  // Error saying why for a worker process that could not be started (a
  // failed fork), an interrupt (Python's KeyboardInterrupt) as it is.
  virtual void StartWorker(int worker) const = 0;
  // Loads every row of `rows` as Dataset::Get(row.index, *row.out, ctx)
  // would, with ctx's seed and worker id, epoch `epoch` and context index
  // row.index; a row that fails gets its `error` (what Get would have
  // thrown) and fails alone. The rows, their order and their contents are
  // exactly those of loading them one by one: only how many cross per
  // message changes (traits().round_trip_rows). `whole_batch`: the rows are
  // every row of one batch, in order, none loaded before, so a backend whose
  // workers collate (a Python collate_fn in worker processes) may ask for
  // the batch's collate in the same exchange. A worker process that dies
  // with the rows in flight is the backend's to handle: it finds out which
  // row killed it, and that row fails (FailureKind::kWorkerDied). Only a
  // thread's cancellation leaves it by an exception. REQUIRES: called by a
  // loader worker (ctx.worker_id()), or the caller's thread with
  // num_workers = 0.
  virtual void LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx,
                        bool whole_batch) const = 0;
  // The loader abandons the samples in flight (a new iteration, Reset,
  // destruction): their results will be discarded, and a Get that can be
  // stopped from outside should return soon.
  virtual void AbandonInFlight() const = 0;
  // Workers started again after one died (StatsSnapshot::worker_restarts).
  virtual int64_t worker_restarts() const = 0;
};

// Whether a claim's rows load together, several per LoadBackend::LoadRows:
// the backend's rows cost a round trip each, and no timeout watches them one
// at a time (else each LoadRows holds one row).
// The Scheduler sizes claims for it and the BatchFiller loads them so.
inline bool LoadsRowsTogether(const LoadBackend& backend, std::chrono::milliseconds timeout) {
  return backend.traits().round_trip_rows && timeout.count() == 0;
}

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_LOAD_BACKEND_H_
