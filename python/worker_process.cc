#include "python/worker_process.h"

#include <optional>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "python/python_seeding.h"
#include "python/sample_structure.h"

namespace feedline::python {
namespace {

using extension::ErrorReply;
using extension::TaskOutput;
using extension::TaskRequest;

class PythonWorkerTask final : public extension::WorkerTask {
 public:
  PythonWorkerTask(const extension::WorkerTaskInfo& info, const PythonWorkerConfig& config)
      : info_(info), config_(config),
        held_(config.collate_fn ? config.collate_fn->get() : py::none(), config.held_limit) {}

  void Start() override {
    scope_.emplace(info_.worker_id, info_.num_workers, info_.seed, 0, config_.dataset);
    // As torch's workers do: one intra-op thread, so that torch code in
    // __getitem__ neither oversubscribes the cores nor enters an OpenMP pool
    // that the fork left without its threads.
    try {
      py::dict modules = py::module_::import("sys").attr("modules");
      if (modules.contains("torch")) modules["torch"].attr("set_num_threads")(1);
    } catch (py::error_already_set&) {
    }
    if (config_.worker_init_fn->get().is_none()) return;
    try {
      config_.worker_init_fn->get()(info_.worker_id);
    } catch (py::error_already_set& e) {
      throw Error(std::string("worker_init_fn raised ") + e.what());
    }
  }

  void Load(const TaskRequest& request, TaskOutput& out) override {
    Enter(request);
    if (!getitem_) getitem_ = RowLoader(config_.dataset->get());
    Seed(request, request.index);
    py::object item = getitem_(request.index);
    if (held_.active()) {
      // Kept here for collate_fn: a placeholder crosses, not its arrays.
      StageHeldSample(
          HeldOrigin{request.index, request.epoch, request.seed, info_.worker_id}, out);
    } else {
      Stage(item, out);
    }
    held_.Keep(item);
  }

  // Each pass of a worker draws from generators seeded by (seed, epoch,
  // worker): its own, whatever the other workers draw.
  void OpenPass(const TaskRequest& request) override {
    Enter(request);
    Seed(request, request.index);
    iterator_ = py::object();
    iterator_ = py::iter(config_.dataset->get());
  }

  bool Next(const TaskRequest& request, TaskOutput& out) override {
    Enter(request);
    if (!iterator_) throw Error("the worker process has no open pass over its dataset");
    py::object item = py::reinterpret_steal<py::object>(PyIter_Next(iterator_.ptr()));
    if (!item) {
      if (PyErr_Occurred()) throw py::error_already_set();
      iterator_ = py::object();
      return false;
    }
    Stage(item, out);
    return true;
  }

  bool Collate(std::span<const int64_t> replies, TaskOutput& out) override {
    return held_.Collate(replies, out);
  }

  // Threads the dataset started run while this worker is idle.
  void BeforeWait() override { wait_state_ = PyEval_SaveThread(); }
  void AfterWait() override { PyEval_RestoreThread(wait_state_); }

  // KeyboardInterrupt, SystemExit and GeneratorExit are never sample
  // errors: the parent raises the same type again (ErrorCause::kInterrupt).
  ErrorReply Failure(std::exception_ptr error) const override {
    try {
      std::rethrow_exception(error);
    } catch (py::error_already_set& e) {
      if (IsInterrupt(e)) {
        return extension::InterruptReply(py::str(e.type().attr("__name__")),
                                         py::str(e.value()));
      }
      return extension::ExceptionReply(PythonErrorText(e), PythonErrorOrigin(e).exception_type);
    } catch (...) {
      return WorkerTask::Failure(std::current_exception());
    }
  }

 private:
  // What get_worker_info() reports for this request.
  void Enter(const TaskRequest& request) {
    scope_->epoch = request.epoch;
    scope_->seed = request.seed;
  }

  void Seed(const TaskRequest& request, int64_t index) {
    if (config_.seed_samples) SeedPythonGenerators(request.seed, request.epoch, index);
  }

  // The item's arrays, with its schema: the parent checks it against the
  // first sample's (and refuses a bfloat16 field if its loader does).
  void Stage(const py::handle& item, TaskOutput& out) {
    out.SetSchema(FillSample(item, config_.whole_samples,
                             [&](const std::string& name, DType dtype, const Shape& shape) {
                               return out.Field(name, dtype, shape);
                             }));
  }

  const extension::WorkerTaskInfo info_;
  const PythonWorkerConfig config_;
  std::optional<WorkerInfoScope> scope_;  // from Start on
  py::object getitem_;  // RowLoader's
  py::object iterator_;
  WorkerHeldItems held_;  // for a collate_fn run here
  PyThreadState* wait_state_ = nullptr;
};

}  // namespace

std::unique_ptr<extension::WorkerTask> MakePythonWorkerTask(const extension::WorkerTaskInfo& info,
                                                            const PythonWorkerConfig& config) {
  return std::make_unique<PythonWorkerTask>(info, config);
}

}  // namespace feedline::python
