// ProcessWorkers: N worker processes, one per engine worker, each with its
// own copy of the dataset (forked), a Unix socket and a shared arena. The
// engine keeps its N worker threads, its sample-level scheduling, slots,
// error policy and in-order delivery; thread w talks to process w.
//
// A map-style sample (LoadSample) is sent as (index, epoch, seed) and the
// row it goes to. With shared memory the batch slots come from this object's
// SharedSlotAllocator, mapped in every worker process: the request lists
// where each field bound to the row lies in them, the process writes those
// fields there, and only metadata comes back. Other fields (not bound, or
// of another shape than the row's) come back in the arena (or the socket's
// payload without shared memory) and the thread copies them into
// out.Allocate. A process that dies
// (end of file, or waitid while waiting) is reaped, diagnosed (signal, exit
// status, the cgroup's OOM kill count), replaced and the sample sent again;
// after max_deaths_per_sample deaths on one sample it fails as
// SampleError(FailureKind::kWorkerDied) for the error policy. Restarts back off and are
// limited. A stream (Exchange) is never replayed: its caller decides.
// Several samples go in one request (LoadRows) and come back in one write;
// if the process dies with them in flight, they are loaded again one by one
// with LoadSample, which finds the one that killed it.
//
// What runs in the child and how error replies are raised is the
// WorkerProgram's (native_worker.h for a C++ Dataset, the Python binding's
// for a Python dataset). The engine reaches them through a
// ProcessLoadBackend (process_load_backend.h), which src/loader_factory
// makes.
//
// Thread safety: LoadSample for worker w (ctx.worker_id()) and Exchange(w)
// are called only from engine thread w; StartWorker(w) from the thread that
// serves w next (it takes over from a thread stuck past a timeout);
// Shutdown, AbandonInFlight, worker_pids and restarts from any thread.
#ifndef FEEDLINE_SRC_PROCESS_PROCESS_WORKERS_H_
#define FEEDLINE_SRC_PROCESS_PROCESS_WORKERS_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/extension/worker_processes.h"
#include "feedline/extension/worker_program.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "src/loader/load_backend.h"
#include "src/process/collated_batches.h"
#include "src/process/process_spawner.h"
#include "src/process/shared_slot_allocator.h"
#include "src/process/worker_child.h"
#include "src/process/worker_death.h"
#include "src/process/worker_protocol.h"

namespace feedline::internal {

// A worker process that could not be started at all: the fork failed (no
// memory, a limit on processes). Not a WorkerInitError: no worker_init ran.
class WorkerStartError : public Error {
 public:
  WorkerStartError(int worker, const std::string& cause)
      : Error("DataLoader worker process " + std::to_string(worker) +
              " could not be started: " + cause) {}
};

struct ProcessWorkerOptions {
  int num_workers = 1;
  bool persistent_workers = false;  // false: a fresh process per worker each epoch
  bool use_shared_memory = true;    // false: arrays follow the metadata through the socket
  uint64_t seed = 0;                // the loader's seed (SampleContext, get_worker_info)
  int max_deaths_per_sample = 3;
  int64_t max_restarts = 100;       // over the loader's life
};

// WorkerProgram and StreamDeathMessage: feedline/extension/worker_program.h.
class ProcessWorkers final : public WorkerProcesses {
 public:
  // Throws Error if options.num_workers < 1.
  ProcessWorkers(std::shared_ptr<WorkerProgram> program, ProcessWorkerOptions options);
  // Stops and reaps every worker process.
  ~ProcessWorkers() override;
  ProcessWorkers(const ProcessWorkers&) = delete;
  ProcessWorkers& operator=(const ProcessWorkers&) = delete;

  // Starts worker process `worker` (or keeps a persistent one) and waits
  // until it is ready (its worker_init done); the engine calls it through
  // LoadBackend::StartWorker. Throws WorkerStartError if the process could
  // not be forked, std::runtime_error if worker_init failed in the child or
  // the process died while starting, repeatedly.
  void StartWorker(int worker) const;

  // Loads sample `index` into `out` through process ctx.worker_id(),
  // restarting a dead process and retrying as described above. Throws
  // SampleError ("worker died", "cancelled", "timeout") or what the
  // program's RaiseError raises.
  void LoadSample(int64_t index, SampleContext& ctx, Sample& out) const;
  // Loads several samples through process ctx.worker_id() in one round
  // trip (LoadBackend::LoadRows): a sample that fails gets its row's
  // error. False, with no row loaded, if the process is not running or died
  // with the request in flight: LoadSample, row by row, restarts it and
  // finds the row that killed it.
  // `whole_batch` (LoadBackend::LoadRows) with a program that collates in
  // the worker: the same request asks for the batch's collate, which
  // CollateIfIdle then hands out.
  bool LoadRows(std::span<RowLoad> rows, int64_t epoch, SampleContext& ctx,
                bool whole_batch) const;

  enum class Outcome {
    kSample,   // `out` holds the item
    kReady,    // the request was done (kOpen)
    kEnd,      // the stream ended
    kDied,     // the process died (`*death` says how); it is reaped
    kClosing,  // Shutdown was called
  };
  // One request to process `worker`, with no retry. Error replies raise as
  // the program says, for index request.index.
  Outcome Exchange(int worker, const WorkRequest& request, Sample* out, SampleContext* ctx,
                   WorkerDeath* death) const;

  // A request still running 200 ms after this has its process killed (its
  // thread sees "cancelled"), so a stuck sample of an abandoned epoch does
  // not hold up the next one.
  void AbandonInFlight() const;
  // Ends all worker processes now: waiting threads return (as "cancelled"),
  // idle workers exit, busy ones are killed after 500 ms. No restarts follow,
  // and a process another thread forks meanwhile is ended by that thread.
  void Shutdown() const override;
  bool closing() const { return shutdown_.load(); }

  // The allocator the loader's batch slots must come from so that the
  // processes write into them; null without shared memory.
  std::shared_ptr<SlotAllocator> slot_allocator() const { return slots_; }

  // The live worker processes' ids (-1 where none runs).
  std::vector<int64_t> worker_pids() const override;
  // Replacements started for workers that died.
  int64_t restarts() const override { return restarts_.load(std::memory_order_relaxed); }
  // The batch is read where the process wrote it, in a room of the shared
  // slots (CollatedBatches).
  std::shared_ptr<const Sample> CollateIfIdle(int worker, int64_t process,
                                              std::span<const int64_t> replies) const override;
  const ProcessWorkerOptions& options() const { return options_; }

 private:
  struct Worker;

  Worker& worker(int w) const;
  // Starts a process for `w`; false (with `*death`) if it died on the way.
  bool Start(int w, WorkerDeath* death) const;
  // Ends the process of `worker` (after closing its socket) and reaps it.
  void Stop(Worker& worker) const;
  WorkerDeath Reap(Worker& worker) const;
  // Takes the process and socket from `worker` (closing the socket); returns
  // the pid to reap, or -1.
  pid_t Detach(Worker& worker) const;
  // One request and its reply; false (with `*death`) if the process died.
  bool Call(Worker& worker, const WorkRequest& request, int64_t index, Sample* out,
            SampleContext* ctx, ReplyKind* kind, WorkerDeath* death) const;
  // Sends `request` (and worker.message) and waits for the first reply.
  bool Send(Worker& worker, const WorkRequest& request, WorkerDeath* death) const;
  // Reads one reply (for sample or item `index`). `batch`: a collated
  // batch, whose reply is no sample of the loader's (not counted, its
  // schema not checked), its fields in worker.room_* where they lie there.
  bool Receive(Worker& worker, int64_t index, Sample* out, SampleContext* ctx, ReplyKind* kind,
               WorkerDeath* death, bool batch = false) const;
  // Reads the batch reply after a kSamplesThenCollate request's samples
  // into worker.collated_ahead.
  bool ReceiveCollatedAhead(Worker& worker, CollatedBatches::Lease lease, size_t samples,
                            WorkerDeath* death) const;
  // The bytes a read batch's fields take in a room.
  static uint64_t RoomBytesOf(const Sample& batch);
  // Reads a sample reply's fields into `out`.
  bool ReadSample(Worker& worker, int fd, uint64_t payload_bytes, Sample& out, SampleContext* ctx,
                  WorkerDeath* death, bool batch) const;

  // Where `out`'s bound fields lie in the shared slots, encoded for a request.
  void EncodeRow(const Sample& out, Worker& worker) const;

  std::shared_ptr<WorkerProgram> program_;
  ProcessWorkerOptions options_;
  // Made before any worker is forked, so that every worker inherits the mapping.
  std::shared_ptr<SharedSlotAllocator> slots_;
  std::shared_ptr<CollatedBatches> collated_;  // where CollateIfIdle reads batches
  mutable ProcessSpawner spawner_;  // declared before workers_: outlives them
  std::vector<std::unique_ptr<Worker>> workers_;
  mutable std::atomic<bool> shutdown_{false};
  mutable std::atomic<int64_t> restarts_{0};
  mutable OomKillCounter oom_kills_;
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_PROCESS_PROCESS_WORKERS_H_
