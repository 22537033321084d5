// LoadBackend: where a loader's samples load, as the engine sees it. The
// engine is given one at construction (src/loader_factory decides which):
//   - ThreadLoadBackend (thread_load_backend.h): the engine's worker threads
//     call Dataset::Get themselves; slots live on the heap;
//   - ProcessLoadBackend (src/process/process_load_backend.h): each worker
//     thread forwards its rows to a worker process, which writes them into
//     slots in shared memory that every process maps.
// The engine asks the backend for what differs between the two, and nothing
// else: the allocator of the batch slots, the loading of a claim's rows in
// one round trip, stopping the samples in flight when an epoch is
// abandoned, and how many workers were started again after one died. Its
// traits switch on the scheduling that only pays off for one of them.
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
};

class LoadBackend {
 public:
  virtual ~LoadBackend() = default;

  virtual LoadBackendTraits traits() const = 0;
  // Where batch slots are allocated.
  virtual std::shared_ptr<SlotAllocator> slot_allocator() const = 0;
  // With traits().round_trip_rows: loads every row of `rows` as
  // Dataset::Get(row.index, *row.out, ctx) would, with ctx's seed and worker
  // id, epoch `epoch` and context index row.index; a row that fails gets its
  // `error` and fails alone. The rows, their order and their contents are
  // exactly those of loading them one by one: only how many cross per
  // message changes. Returns false, with no row to be trusted, when the
  // rows could not be loaded together (a worker process died meanwhile):
  // the caller then loads them one by one with Get, which finds out which
  // row killed it. REQUIRES: called by a loader worker, as Get.
  virtual bool LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx) const = 0;
  // The loader abandons the samples in flight (a new iteration, Reset,
  // destruction): their results will be discarded, and a Get that can be
  // stopped from outside should return soon.
  virtual void AbandonInFlight() const = 0;
  // Workers started again after one died (StatsSnapshot::worker_restarts).
  virtual int64_t worker_restarts() const = 0;
};

// Whether a claim's rows load together (LoadBackend::LoadRows): the backend's
// rows cost a round trip each, and no timeout watches them one at a time.
// The Scheduler sizes claims for it and the BatchFiller loads them so.
inline bool LoadsRowsTogether(const LoadBackend& backend, std::chrono::milliseconds timeout) {
  return backend.traits().round_trip_rows && timeout.count() == 0;
}

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_LOAD_BACKEND_H_
