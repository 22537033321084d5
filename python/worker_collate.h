// A Python collate_fn run in the worker process that loaded the batch, as
// torch and Paddle run it, instead of in the training process under its GIL.
//
// When: a Python map-style dataset whose workers are processes, and a
// collate_fn that a front end marked for the worker (its `in_worker`
// attribute: the function to call there with the list of samples as the
// dataset returned them; feedline.torch and feedline.paddle set it). The
// loader then gives each batch to one worker (batch_per_worker), so that one
// process loads all its rows.
//
// How: every sample loads in the child as before (seeded, its error policy
// run by the parent on its row), but what crosses for it is a placeholder
// (HeldOrigin: its index, epoch, seed and worker), not its arrays: the
// child keeps the Python object it loaded. Both processes count the
// child's sample replies (WorkerProgram::OnSampleReply), so the parent
// names a batch's kept rows by those numbers (WorkerProcesses::
// CollateIfIdle, WorkerTask::Collate): the request that loads a whole
// batch's rows asks for their collate in the same exchange, so the batch is
// usually read with its rows and CollateIfIdle hands it out without another
// round trip (else it asks in one of its own); the child calls collate_fn on its
// objects and sends the result back as pickled fields (pickled_fields.h:
// its numpy arrays and torch tensors out of band, each copied once, into
// a room of the shared slots the parent named: src/process/
// collated_batches.h); the parent unpickles it with those buffers as
// arrays over that memory. So each array of a batch is written once, as
// part of the batch, and read where it was written.
// A batch whose rows did not all come from the process serving the calling
// thread (a worker replaced after a timeout or a death, rows lent to
// another thread) or that the child no longer holds is collated in the
// parent, each placeholder loaded again there as a num_workers=0 loader
// loads it (WorkerCollate::LoadAgain): with seeded samples (feedline's own
// loaders) the same sample, so which process ran collate_fn never changes
// a batch; feedline.torch's workers draw from generators seeded once per
// worker, as torch's do, and such a sample is a fresh draw.
//
// Thread safety: Record and TryCollate from any engine thread; the child
// side (WorkerHeldItems) runs on the child's only Python thread.
#ifndef FEEDLINE_PYTHON_WORKER_COLLATE_H_
#define FEEDLINE_PYTHON_WORKER_COLLATE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "feedline/sample.h"
#include "python/python_support.h"
#include "feedline/extension/worker_processes.h"
#include "feedline/extension/worker_task.h"

namespace feedline::python {

// Where a sample kept in a worker process came from: what crosses instead
// of the sample (one int64[4] field), enough to load it again.
struct HeldOrigin {
  int64_t index = 0;
  int64_t epoch = 0;
  uint64_t seed = 0;
  int64_t worker = -1;
};

// The child's reply for a sample it keeps: `origin` as its only field,
// under the schema of a sample carried whole (the parent's check of the
// first sample's schema is the same for both).
void StageHeldSample(const HeldOrigin& origin, extension::TaskOutput& out);

// The origin a placeholder names, or null for a sample that crossed.
std::optional<HeldOrigin> HeldOriginOf(const Sample& sample);

// The parent's side.
class WorkerCollate {
 public:
  // `dataset` loads a sample again in this process (LoadAgain); the others
  // as PyDataset's.
  WorkerCollate(std::shared_ptr<PyRef> dataset, int num_workers, bool seed_samples)
      : dataset_(std::move(dataset)), num_workers_(num_workers), seed_samples_(seed_samples) {}

  // Set once the loader is built (its processes exist only then).
  void set_workers(std::weak_ptr<extension::WorkerProcesses> workers) {
    std::lock_guard<std::mutex> lock(mu_);
    workers_ = std::move(workers);
  }

  // A sample reply of `worker`'s process number `process` is read into `out`
  // (WorkerProgram::OnSampleReply).
  void Record(int worker, int64_t process, const Sample* out);

  // Asks the process that loaded every one of `samples` to collate them;
  // true with `*result` (the unpickled batch) if it did. REQUIRES: the GIL
  // (released while waiting). Raises what collate_fn raised in the child as
  // the parent's collate would (SampleError kCollate, or an interrupt).
  bool TryCollate(std::span<const Sample* const> samples, py::object* result);

  // The sample a placeholder stands for, loaded again here as a
  // num_workers=0 loader loads it: get_worker_info() naming its worker, the
  // Python generators seeded for it (and restored after) when samples are
  // seeded. REQUIRES: the GIL. Throws SampleError for what it raises.
  py::object LoadAgain(const HeldOrigin& origin) const;

 private:
  struct Origin {
    int worker = -1;
    int64_t process = -1;
    int64_t seq = -1;
    std::thread::id thread;
  };
  struct Counter {
    int64_t process = -1;
    int64_t next = 0;
  };

  const std::shared_ptr<PyRef> dataset_;
  const int num_workers_;
  const bool seed_samples_;
  std::mutex mu_;
  std::weak_ptr<extension::WorkerProcesses> workers_;            // GUARDED_BY(mu_)
  std::unordered_map<const Sample*, Origin> origins_;          // GUARDED_BY(mu_)
  std::unordered_map<int, Counter> counters_;                   // GUARDED_BY(mu_)
};

// The child's side: the objects of its last sample replies, by number.
class WorkerHeldItems {
 public:
  // `collate_fn`: None leaves the child as it was (nothing kept).
  WorkerHeldItems(py::object collate_fn, int64_t limit)
      : collate_fn_(std::move(collate_fn)), limit_(limit) {}

  bool active() const { return !collate_fn_.is_none(); }
  // After a sample reply with `item` was staged.
  void Keep(const py::object& item);
  // collate_fn over the objects of sample replies `replies`, its batch
  // pickled into `out`; false if one is no longer held (WorkerTask::
  // Collate). Throws SampleError (kCollate) for what collate_fn raised.
  bool Collate(std::span<const int64_t> replies, extension::TaskOutput& out);

 private:
  py::object collate_fn_;
  int64_t limit_;
  int64_t next_seq_ = 0;
  std::deque<std::pair<int64_t, py::object>> held_;  // ascending seq
};

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_WORKER_COLLATE_H_
