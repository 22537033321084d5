// ProcessDataset: a Python map-style dataset loaded in worker processes.
//
// The engine keeps its N worker threads, its sample-level scheduling, slots,
// error policy and in-order delivery; this adapter gives engine worker w a
// process of its own. Get(index) on thread w sends (index, epoch, seed) to
// process w over a Unix socket and waits, without the GIL; the process runs
// dataset[index] and writes the arrays into a shared arena (memfd); the
// thread copies each field into out.Allocate (for fixed fields, the batch row
// itself). Python's GIL is never taken in the parent for a sample, so N
// processes load N samples at once.
//
// A worker that dies (end of file on its socket) is reaped, replaced and the
// same sample retried; after kMaxDeathsPerSample deaths on one sample that
// sample fails as SampleError("worker died") naming the signal and whether
// the cgroup's OOM killer acted. Restarts back off and are limited.
//
// Example (what feedline_module.cc does for worker_mode="process"):
//   auto processes = std::make_shared<ProcessDataset>(dataset, init_fn, options, structure);
//   loader_options.worker_init = [processes](int w) { processes->StartWorker(w); };
//   DataLoader loader(processes, loader_options);
//
// Thread safety: Get(…, ctx) for worker w is called only from engine thread
// w (as the engine does); Shutdown, worker_pids and restarts may be called
// from any thread.
#ifndef FEEDLINE_PYTHON_PROCESS_DATASET_H_
#define FEEDLINE_PYTHON_PROCESS_DATASET_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "python/process_spawner.h"
#include "python/python_support.h"

namespace feedline::python {

struct ProcessWorkerOptions {
  int num_workers = 1;
  bool persistent_workers = false;  // false: a fresh process per worker each epoch
  bool use_shared_memory = true;    // false: arrays follow the metadata through the socket
  uint64_t seed = 0;                // reported by get_worker_info() in the worker
  int max_deaths_per_sample = 3;
  int64_t max_restarts = 100;       // over the loader's life
};

class ProcessDataset : public Dataset {
 public:
  // REQUIRES: the GIL. `structure` learns the samples' layout as in thread mode.
  ProcessDataset(py::object dataset, py::object worker_init_fn, ProcessWorkerOptions options,
                 std::shared_ptr<Structure> structure);
  // Stops and reaps every worker process.
  ~ProcessDataset() override;

  int64_t size() const override { return size_; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  // The Python dataset's source(index), when it has one.
  std::string Source(int64_t index) const override;
  // A sample still running 200 ms after this has its process killed (its
  // thread throws "cancelled"), so a stuck sample of an abandoned epoch does
  // not hold up the next one.
  void AbandonInFlight() const override;

  // Starts worker process `worker` (or keeps a persistent one), runs
  // worker_init_fn there and waits until it is ready; the engine calls it as
  // LoaderOptions::worker_init. Throws std::runtime_error if worker_init_fn
  // raised. REQUIRES: the GIL not held.
  void StartWorker(int worker) const;

  // Ends all worker processes now: waiting Gets return (as SampleError
  // "cancelled"), idle workers exit, busy ones are killed. No restarts follow.
  void Shutdown() const;

  // The live worker processes' ids (-1 where none runs).
  std::vector<int64_t> worker_pids() const;
  // Replacements started for workers that died.
  int64_t restarts() const { return restarts_.load(std::memory_order_relaxed); }

 private:
  struct Worker;
  struct Death;

  // Starts a process for `w`; false (with `*death`) if it died on the way.
  bool Start(int w, Death* death) const;
  // Ends the process of `w` (after closing its socket), reaps it, returns how it ended.
  void Stop(Worker& worker) const;
  Death Reap(Worker& worker) const;
  // Takes the process and socket from `worker` (closing the socket); returns
  // the pid to reap, or -1.
  pid_t Detach(Worker& worker) const;
  // One request/reply; false (with `*death`) if the process died.
  bool Load(Worker& worker, int64_t index, SampleContext& ctx, Sample& out, Death* death) const;

  std::shared_ptr<PyRef> dataset_;
  std::shared_ptr<PyRef> worker_init_fn_;
  int64_t size_;
  ProcessWorkerOptions options_;
  std::shared_ptr<Structure> structure_;
  mutable ProcessSpawner spawner_;  // declared before workers_: outlives them
  std::vector<std::unique_ptr<Worker>> workers_;
  mutable std::atomic<bool> shutdown_{false};
  mutable std::atomic<int64_t> restarts_{0};
  mutable std::atomic<int64_t> oom_kills_seen_;
};

// Whether a loader uses worker processes: `mode` is "thread", "process" or
// "auto". "auto" picks processes for a Python map-style dataset with
// num_workers > 0 (its __getitem__ holds the GIL) and threads otherwise
// (native datasets run without the GIL; IterableDatasets stay on threads for
// now). "process" with a native or iterable dataset is an Error saying so;
// with num_workers = 0 samples load in the calling thread either way.
bool UseWorkerProcesses(const std::string& mode, bool native, bool iterable, int num_workers);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PROCESS_DATASET_H_
