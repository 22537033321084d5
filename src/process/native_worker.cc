#include "feedline/extension/native_worker.h"

#include <memory>
#include <new>
#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::extension {
namespace {

// worker_init as a task's Start: what it throws fails the worker's start.
void RunWorkerInit(const std::function<void(int)>& worker_init, int worker_id) {
  if (!worker_init) return;
  try {
    worker_init(worker_id);
  } catch (const std::exception& e) {
    throw Error(std::string("worker_init failed: ") + e.what());
  } catch (...) {
    throw Error("worker_init threw a non-std::exception");
  }
}

// A C++ Dataset's samples, loaded with Get into a Sample bound to the
// requested row: its declared fields are written there, as on a worker
// thread; the others are copied into the arena.
class DatasetTask final : public WorkerTask {
 public:
  DatasetTask(const Dataset& dataset, const std::function<void(int)>& worker_init, int worker_id)
      : dataset_(dataset), worker_init_(worker_init), worker_id_(worker_id) {}

  void Start() override { RunWorkerInit(worker_init_, worker_id_); }

  void Load(const TaskRequest& request, TaskOutput& out) override {
    sample_.Clear();
    out.Bind(sample_);
    dataset_.Get(request.index, sample_, *request.context);
    out.Put(sample_);
  }

 private:
  const Dataset& dataset_;
  const std::function<void(int)>& worker_init_;
  const int worker_id_;
  Sample sample_;
};

// A C++ IterableDataset: this worker's passes over it.
class StreamTask final : public WorkerTask {
 public:
  StreamTask(const IterableDataset& stream, const std::function<void(int)>& worker_init,
             const WorkerTaskInfo& info)
      : stream_(stream), worker_init_(worker_init), info_(info) {}

  void Start() override { RunWorkerInit(worker_init_, info_.worker_id); }

  void OpenPass(const TaskRequest& request) override {
    pass_.reset();
    pass_ = stream_.Open(static_cast<int>(request.index), info_.num_workers, request.epoch);
  }

  bool Next(const TaskRequest& request, TaskOutput& out) override {
    if (!pass_) throw Error("the worker process has no open pass over its stream");
    sample_.Clear();
    out.Bind(sample_);
    if (!pass_->Next(sample_, *request.context)) {
      pass_.reset();
      return false;
    }
    out.Put(sample_);
    return true;
  }

 private:
  const IterableDataset& stream_;
  const std::function<void(int)>& worker_init_;
  const WorkerTaskInfo info_;
  std::unique_ptr<SampleStream> pass_;
  Sample sample_;
};

}  // namespace

NativeWorkerProgram::NativeWorkerProgram(std::shared_ptr<const Dataset> dataset,
                                         std::function<void(int)> worker_init)
    : dataset_(std::move(dataset)), worker_init_(std::move(worker_init)) {}

NativeWorkerProgram::NativeWorkerProgram(std::shared_ptr<const IterableDataset> stream,
                                         std::function<void(int)> worker_init)
    : stream_(std::move(stream)), worker_init_(std::move(worker_init)) {}

std::unique_ptr<WorkerTask> NativeWorkerProgram::MakeTask(const WorkerTaskInfo& info) {
  if (dataset_) return std::make_unique<DatasetTask>(*dataset_, worker_init_, info.worker_id);
  return std::make_unique<StreamTask>(*stream_, worker_init_, info);
}

void NativeWorkerProgram::RaiseError(const ErrorReply& error, int64_t index) const {
  if (error.cause == ErrorCause::kInterrupt && error.origin.exception_type == kBadAllocType) {
    throw std::bad_alloc();
  }
  WorkerProgram::RaiseError(error, index);
}

}  // namespace feedline::extension
