// Extension surface (docs/architecture.md, "Extension surface"): a
// loader's worker processes, as the front end that built the loader sees
// them (BuiltLoader, build_data_loader.h): to close them first and to
// report them (the Python loader's worker_pids and worker_restarts). The
// library's ProcessWorkers (src/process/process_workers.h) implements it.
// It may change with any version of the library.
//
// Thread safety: every function is safe from any thread.
#ifndef FEEDLINE_EXTENSION_WORKER_PROCESSES_H_
#define FEEDLINE_EXTENSION_WORKER_PROCESSES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "feedline/export.h"
#include "feedline/sample.h"

namespace feedline::extension {

class FEEDLINE_EXPORT WorkerProcesses {
 public:
  virtual ~WorkerProcesses() = default;
  // Ends all worker processes now: threads waiting on them return (their
  // samples "cancelled"), idle workers exit, busy ones are killed after
  // 500 ms, and none is restarted. A front end calls it first when it
  // closes a loader, to wake engine threads that wait on the processes.
  virtual void Shutdown() const = 0;
  // The live worker processes' ids (-1 where none runs).
  virtual std::vector<int64_t> worker_pids() const = 0;
  // Replacements started for workers that died.
  virtual int64_t restarts() const = 0;
  // Asks `worker`'s process to collate the samples of its sample replies
  // numbered `replies` (WorkerTask::Collate), only if it is still process
  // number `process` (WorkerProgram::OnSampleReply) and no thread is
  // loading through it. Returns the batch, its fields where the process
  // wrote them (shared memory, kept while the pointer lives), or null when
  // the process is busy, another one, gone, or no longer holds a sample
  // (the caller then collates itself). A failure raises as the program
  // says (index -1); a death is handled as a load's: the next load
  // restarts the process.
  virtual std::shared_ptr<const Sample> CollateIfIdle(
      int worker, int64_t process, std::span<const int64_t> replies) const = 0;
};

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_WORKER_PROCESSES_H_
