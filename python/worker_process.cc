#include "python/worker_process.h"

#include <unistd.h>

#include <string>

#include "feedline/error.h"
#include "feedline/extension/worker_protocol.h"
#include "python/python_seeding.h"

namespace feedline::python {
namespace {

using extension::ErrorReply;
using extension::ReplyKind;
using extension::ReplyStaging;
using extension::RequestedRow;
using extension::RequestKind;
using extension::SampleReply;
using extension::WorkRequest;

// Reads the next request (and the batch row it names) without the GIL, so
// threads the dataset started keep running while this worker is idle.
bool ReadRequest(int fd, RequestedRow& row, WorkRequest* request) {
  PyThreadState* state = PyEval_SaveThread();
  bool ok = false;
  try {
    ok = row.Read(fd, request);
  } catch (...) {
    PyEval_RestoreThread(state);
    throw;
  }
  PyEval_RestoreThread(state);
  return ok;
}

// Writes `item`'s arrays, as a worker thread would, into the batch row the
// request named (a field of the row's dtype and shape) or else the staging,
// with the sample's schema: the parent checks it against the first sample's
// (and refuses a bfloat16 field if its loader does).
void StageItem(const py::handle& item, bool whole, const RequestedRow& row, ReplyStaging& staging,
               SampleReply& reply) {
  reply.fields.clear();
  reply.schema = FillSample(item, whole, [&](const std::string& name, DType dtype, const Shape& shape) {
    if (std::byte* to = row.Find(name, dtype, shape)) {
      ReplyStaging::AddInPlace(name, dtype, shape, static_cast<uint64_t>(row.OffsetOf(to)),
                               &reply);
      return Tensor(dtype, shape, to);
    }
    return Tensor(dtype, shape, staging.AddField(name, dtype, shape, &reply));
  });
}

void ReplyWithItem(int fd, const py::handle& item, bool whole, const RequestedRow& row,
                   ReplyStaging& staging, SampleReply& reply) {
  staging.Clear();
  StageItem(item, whole, row, staging, reply);
  if (!staging.Send(fd, &reply)) _exit(0);  // the parent is gone
}

// The error reply for what a sample raised: KeyboardInterrupt, SystemExit
// and GeneratorExit are never sample errors; the parent raises the same
// type again (ErrorCause::kInterrupt).
ErrorReply ErrorFor(py::error_already_set& e) {
  if (IsInterrupt(e)) {
    return extension::InterruptReply(py::str(e.type().attr("__name__")), py::str(e.value()));
  }
  return extension::ExceptionReply(PythonErrorText(e), PythonErrorOrigin(e).exception_type);
}

void ReplyDone(int fd, ReplyKind kind) {
  if (!extension::WriteMessage(fd, kind, std::string())) _exit(0);
}

// The state of one worker: its dataset and, for an IterableDataset, the
// current pass.
class Worker {
 public:
  Worker(const extension::WorkerChannel& channel, const PythonWorkerConfig& config)
      : fd_(channel.socket_fd), worker_id_(channel.worker_id), row_(channel),
        staging_(channel.arena_fd),
        dataset_(config.dataset), seed_samples_(config.seed_samples),
        whole_samples_(config.whole_samples),
        held_(config.collate_fn ? config.collate_fn->get() : py::none(), config.held_limit) {}

  bool Read(WorkRequest* request) { return ReadRequest(fd_, row_, request); }

  void Serve(const WorkRequest& request) {
    switch (static_cast<RequestKind>(request.kind)) {
      case RequestKind::kSample: {
        if (!getitem_) getitem_ = dataset_->get().attr("__getitem__");
        Seed(request, request.index);
        py::object item = getitem_(request.index);
        staging_.Clear();
        StageSample(item, request, request.index);
        if (!staging_.Send(fd_, &reply_)) _exit(0);  // the parent is gone
        held_.Keep(item);
        return;
      }
      case RequestKind::kSamples: {
        // Each sample as kSample does, its own seeding included; a sample
        // that raises gets its error reply and the others go on. The
        // replies go out in one write, so the parent wakes once.
        if (!getitem_) getitem_ = dataset_->get().attr("__getitem__");
        gather_.clear();
        staging_.Clear();
        for (size_t i = 0; i < row_.num_samples(); ++i) {
          const int64_t index = row_.Select(i).index;
          staging_.NextSample();
          try {
            Seed(request, index);
            py::object item = getitem_(index);
            StageSample(item, request, index);
            staging_.Append(&gather_, &reply_);
            held_.Keep(item);
          } catch (py::error_already_set& e) {
            extension::AppendErrorReply(&gather_, ErrorFor(e));
          } catch (const SampleError& e) {
            extension::AppendErrorReply(&gather_, extension::SampleErrorReply(e));
          } catch (const std::exception& e) {
            extension::AppendErrorReply(&gather_, extension::ExceptionReply(e.what()));
          }
        }
        if (!extension::WriteAll(fd_, gather_.data(), gather_.size())) _exit(0);
        return;
      }
      case RequestKind::kCollate:
        held_.Collate(fd_, row_, staging_, reply_);
        return;
      case RequestKind::kOpen:
        // Each pass of a worker draws from generators seeded by (seed,
        // epoch, worker): its own, whatever the other workers draw.
        Seed(request, request.index);
        iterator_ = py::object();
        iterator_ = py::iter(dataset_->get());
        ReplyDone(fd_, ReplyKind::kReady);
        return;
      case RequestKind::kNext: {
        if (!iterator_) throw Error("the worker process has no open pass over its dataset");
        py::object item = py::reinterpret_steal<py::object>(PyIter_Next(iterator_.ptr()));
        if (!item) {
          if (PyErr_Occurred()) throw py::error_already_set();
          iterator_ = py::object();
          ReplyDone(fd_, ReplyKind::kEnd);
          return;
        }
        ReplyWithItem(fd_, item, whole_samples_, row_, staging_, reply_);
        return;
      }
    }
    throw Error("the worker process got a request of unknown kind " +
                std::to_string(request.kind));
  }

 private:
  // A sample kept for collate_fn here crosses as a placeholder, not as its
  // arrays (worker_collate.h): the batch carries them.
  void StageSample(const py::handle& item, const WorkRequest& request, int64_t index) {
    if (held_.active()) {
      StageHeldSample(HeldOrigin{index, request.epoch, request.seed, worker_id_}, staging_,
                      reply_);
      return;
    }
    StageItem(item, whole_samples_, row_, staging_, reply_);
  }

  void Seed(const WorkRequest& request, int64_t index) {
    if (seed_samples_) SeedPythonGenerators(request.seed, request.epoch, index);
  }

  int fd_;
  int worker_id_;
  RequestedRow row_;
  ReplyStaging staging_;
  SampleReply reply_;
  std::string gather_;  // the replies to a kSamples request
  std::shared_ptr<PyRef> dataset_;
  py::object getitem_;
  py::object iterator_;
  bool seed_samples_;
  bool whole_samples_;
  WorkerHeldItems held_;  // for a collate_fn run here
};

}  // namespace

void RunWorkerProcess(const extension::WorkerChannel& channel, const PythonWorkerConfig& config) {
  extension::EnterWorkerChild(channel);
  const int fd = channel.socket_fd;
  try {
    WorkerInfoScope info(channel.worker_id, channel.num_workers, channel.seed, 0, config.dataset);
    // As torch's workers do: one intra-op thread, so that torch code in
    // __getitem__ neither oversubscribes the cores nor enters an OpenMP pool
    // that the fork left without its threads.
    try {
      py::dict modules = py::module_::import("sys").attr("modules");
      if (modules.contains("torch")) modules["torch"].attr("set_num_threads")(1);
    } catch (py::error_already_set&) {
    }
    if (!config.worker_init_fn->get().is_none()) {
      try {
        config.worker_init_fn->get()(channel.worker_id);
      } catch (py::error_already_set& e) {
        extension::SendErrorReply(
            fd, extension::WorkerInitReply(std::string("worker_init_fn raised ") + e.what()));
        _exit(1);
      }
    }
    ReplyDone(fd, ReplyKind::kReady);

    Worker worker(channel, config);
    WorkRequest request;
    while (worker.Read(&request)) {
      info.epoch = request.epoch;
      info.seed = request.seed;
      try {
        worker.Serve(request);
      } catch (py::error_already_set& e) {
        extension::SendErrorReply(fd, ErrorFor(e));
      } catch (const SampleError& e) {
        extension::SendErrorReply(fd, extension::SampleErrorReply(e));
      } catch (const std::exception& e) {
        extension::SendErrorReply(fd, extension::ExceptionReply(e.what()));
      }
    }
  } catch (...) {
    // Nothing can be reported past a broken socket; the parent sees the exit.
  }
  _exit(0);
}

}  // namespace feedline::python
