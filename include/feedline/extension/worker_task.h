// Extension surface (docs/architecture.md, "Extension surface"): what a
// worker process runs. A program hands the library a WorkerTask for each
// child it forks (WorkerProgram::MakeTask, worker_program.h); the library
// owns the child's one loop (src/process/child_loop.h): it reads each
// request from the channel to the parent, calls the task, and writes the
// reply, every request kind on one backend. A task never sees a message:
// the protocol is private to the library, so a worker on another machine
// can later speak it over a socket without any task changing.
//
// A task loads a map-style sample (Load), opens and advances its pass over
// a stream (OpenPass, Next), and may collate samples it loaded and kept
// (Collate: the parent then receives the batch, not the samples). It
// writes what it produced through a TaskOutput, which puts each array once
// where the parent reads it: the batch row the request named (shared
// memory), else the worker's shared arena.
//
// Example (a task that serves index * 2 as field "x"):
//   class Doubling : public feedline::extension::WorkerTask {
//    public:
//     void Load(const TaskRequest& request, TaskOutput& out) override {
//       Tensor x = out.Field("x", DType::kI64, Shape());
//       *static_cast<int64_t*>(x.raw()) = request.index * 2;
//     }
//   };
//
// It may change with any version of the library.
//
// Thread safety: a task runs on the child's only thread, one request at a
// time.
#ifndef FEEDLINE_EXTENSION_WORKER_TASK_H_
#define FEEDLINE_EXTENSION_WORKER_TASK_H_

#include <cstdint>
#include <exception>
#include <span>
#include <string>

#include "feedline/export.h"
#include "feedline/extension/worker_failure.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/sample_schema.h"
#include "feedline/tensor.h"

namespace feedline::extension {

// Which worker a task runs as.
struct WorkerTaskInfo {
  int worker_id = 0;
  int num_workers = 1;
  uint64_t seed = 0;  // the loader's seed
};

// One request, as the task sees it.
struct TaskRequest {
  // Load: the sample's index. OpenPass: the worker whose pass it is.
  int64_t index = 0;
  int64_t epoch = 0;
  uint64_t seed = 0;  // the seed the parent's engine runs with
  // The SampleContext a worker thread would have given this sample (its Rng
  // draws the same), for a C++ Dataset's Get; its stage times go back to
  // the parent with the reply.
  SampleContext* context = nullptr;
};

// Where a task writes one reply (a sample, a stream's item, a batch).
class FEEDLINE_EXPORT TaskOutput {
 public:
  virtual ~TaskOutput() = default;
  // Memory for field `name`: in the batch row the request named when the
  // row expects this dtype and shape there, else in the worker's arena.
  // Valid until the next Field call (the arena may move when it grows).
  virtual Tensor Field(const std::string& name, DType dtype, const Shape& shape) = 0;
  // How the fields nest (a Python sample's tree), checked by the parent
  // against the first sample's (WorkerProgram::CheckSchema); none for a C++
  // Dataset's samples, whose fields it declared.
  virtual void SetSchema(SampleSchema schema) = 0;
  // For a C++ Sample: Bind before filling it, so that its declared fields
  // are written into the batch row as on a worker thread (a declared field
  // of another dtype or shape fails as "schema" there too); Put after, which
  // copies the fields that are not in the row into the arena.
  virtual void Bind(Sample& sample) = 0;
  virtual void Put(const Sample& sample) = 0;
};

class FEEDLINE_EXPORT WorkerTask {
 public:
  virtual ~WorkerTask() = default;
  // Once, before the first request (a worker_init). What it throws fails
  // the worker's start, with its message.
  virtual void Start() {}
  // Map-style: loads sample `request.index` into `out`. What it throws is
  // that sample's failure (Failure says how it is reported). Default:
  // refuses (a stream's task).
  virtual void Load(const TaskRequest& request, TaskOutput& out);
  // A stream: starts a new pass of worker `request.index` over
  // `request.epoch`. Default: refuses (a map-style task).
  virtual void OpenPass(const TaskRequest& request);
  // The pass's next item into `out`; false at its end.
  virtual bool Next(const TaskRequest& request, TaskOutput& out);
  // Collates the samples this process loaded in its sample replies
  // numbered `replies` (counted from 0 for its first: the parent's
  // WorkerProgram::OnSampleReply counts them too) into one batch in `out`;
  // false if it no longer holds one of them (the parent then collates the
  // rows it received). Default: false.
  virtual bool Collate(std::span<const int64_t> replies, TaskOutput& out);
  // Around the wait for the next request (a Python task releases its
  // interpreter lock there, so threads its dataset started run on).
  virtual void BeforeWait() {}
  virtual void AfterWait() {}
  // Called in a catch block: what the exception in flight reports. Default:
  // a SampleError as itself, std::bad_alloc as an interrupt, any other
  // exception as kException with its what().
  virtual ErrorReply Failure(std::exception_ptr error) const;
};

}  // namespace feedline::extension

#endif  // FEEDLINE_EXTENSION_WORKER_TASK_H_
