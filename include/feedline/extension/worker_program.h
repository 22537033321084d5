// Extension surface (docs/architecture.md, "Extension surface"): what a
// loader's worker processes run. The library owns the processes, their
// sockets, shared arenas, restarts, death diagnosis and the child's one
// loop (src/process/); a WorkerProgram gives each child its task
// (MakeTask: what a request does, worker_task.h) and says how the parent
// checks and raises what a child reports. The library's own program runs a
// C++ Dataset or IterableDataset (NativeWorkerProgram, native_worker.h);
// the Python binding's runs a Python dataset
// (python/python_worker_program.h).
// A program reaches the loader through a LoaderSpec (loader_spec.h). It may
// change with any version of the library.
//
// Thread safety: the fork hooks run on the library's spawner thread, one
// call at a time; MakeTask in the forked child only; CheckSchema, RaiseError
// and RaiseStreamDeath on the engine's worker threads, concurrently.
#ifndef FEEDLINE_EXTENSION_WORKER_PROGRAM_H_
#define FEEDLINE_EXTENSION_WORKER_PROGRAM_H_

#include <cstdint>
#include <string>

#include "feedline/export.h"
#include <memory>

#include "feedline/extension/worker_death.h"
#include "feedline/extension/worker_failure.h"
#include "feedline/extension/worker_task.h"
#include "feedline/sample.h"
#include "feedline/sample_schema.h"

namespace feedline::extension {

// What runs around a fork, on the spawner thread (a Python program takes
// the GIL and calls PyOS_BeforeFork / PyOS_AfterFork_Child / _Parent
// there, as os.fork does). Calls are serialized.
class FEEDLINE_EXPORT ForkHooks {
 public:
  virtual ~ForkHooks() = default;
  virtual void BeforeFork() {}
  virtual void AfterForkInParent() {}
  // In the child, before MakeTask.
  virtual void AfterForkInChild() {}
};

// What the worker processes run, and how the parent reads their answers.
class FEEDLINE_EXPORT WorkerProgram : public ForkHooks {
 public:
  // In the child, right after the fork (and AfterForkInChild): the task
  // this worker runs. The library's child loop calls its Start, then serves
  // the parent's requests with it until the parent closes the channel.
  virtual std::unique_ptr<WorkerTask> MakeTask(const WorkerTaskInfo& info) = 0;
  // In the parent, before a sample reply's fields are copied: the schema
  // the task set (TaskOutput::SetSchema; the Python binding checks it
  // against the first sample's). A schema that repeats the one this worker
  // sent last, which CheckSchema accepted, is not checked again: the check
  // must depend only on the schema. Default: nothing.
  virtual void CheckSchema(const SampleSchema& schema) const { (void)schema; }
  // In the parent, on the loading thread, as a sample reply of `worker`'s
  // process number `process` (1 for its first, 2 for the one started after
  // it, ...) is read into `out`, before CheckSchema: the replies of one
  // process, counted from 0, are the numbers WorkerTask::Collate is given
  // (WorkerProcesses::CollateIfIdle). Default: nothing.
  virtual void OnSampleReply(int worker, int64_t process, const Sample* out) const {
    (void)worker, (void)process, (void)out;
  }
  // Whether the tasks keep what they load and collate it on request
  // (WorkerTask::Collate): the request that loads a whole batch then asks
  // for its collate too, and WorkerProcesses::CollateIfIdle hands out that
  // batch without another round trip. Default: false.
  virtual bool CollatesInWorker() const { return false; }
  // In the parent: raises what an error reply says, for sample (or stream
  // item) `index`. Default: SampleError(reason, source, message, index).
  [[noreturn]] virtual void RaiseError(const ErrorReply& error, int64_t index) const;
  // In the parent: raises that the process of stream worker `worker` died
  // mid-pass (`death` says how); a stream cannot be replayed, so that
  // worker's pass ends there. Default: a SampleError (kWorkerDied) naming
  // the worker and how it died, for the error policy; the Python program
  // raises a RuntimeError, which ends the epoch whatever the policy.
  [[noreturn]] virtual void RaiseStreamDeath(int worker, const WorkerDeath& death) const;
  // What opening a stream's pass is called in a failure's message, before
  // the child's message. Default: "IterableDataset::Open raised ".
  virtual std::string OpenFailurePrefix() const { return "IterableDataset::Open raised "; }
};

// What RaiseStreamDeath says first (the worker, how it died, that it cannot
// be replayed), for a program that raises it as its own type.
FEEDLINE_EXPORT std::string StreamDeathMessage(int worker, const WorkerDeath& death);

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_WORKER_PROGRAM_H_
