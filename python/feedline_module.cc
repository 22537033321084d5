// feedline._feedline: the pybind11 binding under the feedline Python package.
//
// Kept thin: the Python files shape the API (paddle.io names and defaults);
// this file adapts types and threads. Three rules hold throughout:
//   1. The GIL is released around every call into the engine, and taken only
//      where Python code runs (a Python dataset, collate_fn, sampler,
//      worker_init_fn). Worker threads take it themselves.
//   2. A batch's arrays view its slot: they share one capsule holding a
//      feedline::Batch, so the slot returns to the pool when the last array dies.
//   3. Python objects reachable from engine threads are held by PyRef, whose
//      destructor takes the GIL, since the engine may drop them on any thread.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "feedline/byte_size.h"
#include "feedline/extension/build_data_loader.h"
#include "feedline/extension/worker_death.h"
#include "feedline/feedline.h"
#include "python/dlpack_export.h"
#include "python/fork_safe_point.h"
#include "python/held_objects.h"
#include "python/python_seeding.h"
#include "python/python_support.h"
#include "python/python_worker_program.h"

namespace py = pybind11;

namespace feedline::python {

py::dict LoopReportToPython(const LoopReport& report);  // training_loop_module.cc

namespace {

// ---------------------------------------------------------------------------
// Python datasets, samplers and callbacks as C++ objects.

// A Python map-style dataset (__getitem__ and __len__). Every Get takes the
// GIL, so Python datasets load one sample at a time whatever num_workers is,
// except where the Python code itself releases the GIL (file reads, numpy).
// A sample loaded in this process: its fields, or, when it is carried whole
// for a collate_fn (`held` not null), the object itself kept by its ticket.
void FillInProcess(const py::handle& item, Structure& structure, HeldObjects* held, Sample& out) {
  if (held != nullptr) {
    structure.Observe(WholeSampleSchema());
    held->Hold(item, out);
    return;
  }
  FillFields(item, structure, [&](const std::string& name, DType dtype, const Shape& shape) {
    return out.Allocate(name, dtype, shape);
  });
}

class PyDataset : public Dataset {
 public:
  // `seed_samples`: with num_workers = 0, seed the Python generators per
  // sample (python_seeding.h); feedline.torch leaves them alone, as torch.
  // `held`: keeps samples carried whole for a collate_fn (else null).
  PyDataset(py::object dataset, int num_workers, std::shared_ptr<Structure> structure,
            bool seed_samples, std::shared_ptr<HeldObjects> held)
      : dataset_(std::make_shared<PyRef>(dataset)),
        getitem_(std::make_shared<PyRef>(RowLoader(dataset))),
        size_(static_cast<int64_t>(py::len(dataset))),
        num_workers_(num_workers),
        structure_(std::move(structure)),
        seed_samples_(seed_samples),
        held_(std::move(held)) {}

  int64_t size() const override { return size_; }

  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    CheckIndex(index, size_);
    py::gil_scoped_acquire gil;
    WorkerInfoScope info(ctx.worker_id(), num_workers_, ctx.seed(), ctx.epoch(), dataset_);
    LoaderCodeScope running(structure_.get());
    try {
      // In the caller's thread (num_workers = 0) the sample's draws are
      // seeded as in a worker process, and the caller's state comes back
      // after; worker threads leave the training process's generators alone.
      // The caller's own generators are saved around the whole Next() call
      // (PyLoader), so seeding them here costs little per sample.
      if (ctx.worker_id() < 0 && seed_samples_) SeedPythonGenerators(ctx.seed(), ctx.epoch(), index);
      FillInProcess(getitem_->get()(index), *structure_, held_.get(), out);
    } catch (py::error_already_set& e) {
      // Never a sample error: an interrupt, or the loader used from its own dataset.
      if (IsInterrupt(e) || running.misuse()) throw PyInterrupt{std::move(e)};
      throw SampleError(FailureKind::kException, "", PythonErrorText(e), index,
                        PythonErrorOrigin(e));
    }
  }

  // The Python dataset's source(index), when it has one: it names a failed
  // sample, whether it loaded on a thread or in a worker process.
  std::string Source(int64_t index) const override {
    py::gil_scoped_acquire gil;
    try {
      if (py::hasattr(dataset_->get(), "source")) {
        return py::str(dataset_->get().attr("source")(index));
      }
    } catch (py::error_already_set&) {
      // A source is a courtesy for messages; its failure must not hide the error.
    }
    return {};
  }

 private:
  std::shared_ptr<PyRef> dataset_;
  std::shared_ptr<PyRef> getitem_;
  int64_t size_;
  int num_workers_;
  std::shared_ptr<Structure> structure_;
  bool seed_samples_;
  std::shared_ptr<HeldObjects> held_;
};

// One worker's iterator over a Python IterableDataset.
class PyStream : public SampleStream {
 public:
  PyStream(std::shared_ptr<PyRef> dataset, std::shared_ptr<PyRef> iterator, int num_workers,
           std::shared_ptr<Structure> structure, std::shared_ptr<HeldObjects> held)
      : dataset_(std::move(dataset)),
        iterator_(std::move(iterator)),
        num_workers_(num_workers),
        structure_(std::move(structure)),
        held_(std::move(held)) {}

  bool Next(Sample& out, SampleContext& ctx) override {
    py::gil_scoped_acquire gil;
    WorkerInfoScope info(ctx.worker_id(), num_workers_, ctx.seed(), ctx.epoch(), dataset_);
    LoaderCodeScope running(structure_.get());
    try {
      py::object item = py::reinterpret_steal<py::object>(PyIter_Next(iterator_->get().ptr()));
      if (!item) {
        if (PyErr_Occurred()) throw py::error_already_set();
        return false;
      }
      FillInProcess(item, *structure_, held_.get(), out);
      return true;
    } catch (py::error_already_set& e) {
      if (IsInterrupt(e) || running.misuse()) throw PyInterrupt{std::move(e)};
      throw SampleError(FailureKind::kException, "", PythonErrorText(e), ctx.index(),
                        PythonErrorOrigin(e));
    }
  }

 private:
  std::shared_ptr<PyRef> dataset_;
  std::shared_ptr<PyRef> iterator_;
  int num_workers_;
  std::shared_ptr<Structure> structure_;
  std::shared_ptr<HeldObjects> held_;
};

class PyIterableDataset : public IterableDataset {
 public:
  PyIterableDataset(py::object dataset, int num_workers, uint64_t seed,
                    std::shared_ptr<Structure> structure, std::shared_ptr<HeldObjects> held)
      : dataset_(std::make_shared<PyRef>(std::move(dataset))),
        num_workers_(num_workers),
        seed_(seed),
        structure_(std::move(structure)),
        held_(std::move(held)) {}

  std::unique_ptr<SampleStream> Open(int worker_id, int num_workers, int64_t epoch) const override {
    py::gil_scoped_acquire gil;
    // torch and Paddle report no worker info in the main process.
    WorkerInfoScope info(num_workers_ == 0 ? -1 : worker_id, num_workers, seed_, epoch, dataset_);
    try {
      auto iterator = std::make_shared<PyRef>(py::iter(dataset_->get()));
      return std::make_unique<PyStream>(dataset_, std::move(iterator), num_workers_, structure_,
                                        held_);
    } catch (py::error_already_set& e) {
      if (IsInterrupt(e)) throw PyInterrupt{std::move(e)};
      // A sample error, so that the dataset's own exception type can be
      // raised again (feedline.torch) and the loader counts it.
      throw SampleError(FailureKind::kException, "", "iter(dataset) raised " + PythonErrorText(e),
                        -1, PythonErrorOrigin(e));
    }
  }

 private:
  std::shared_ptr<PyRef> dataset_;
  int num_workers_;
  uint64_t seed_;
  std::shared_ptr<Structure> structure_;
  std::shared_ptr<HeldObjects> held_;
};

// Reads a Python iterable of indices; len() gives the size. Each epoch's
// order is read once and kept, so Indices stays a function of the epoch even
// though a Python sampler returns a new order on every iteration.
std::vector<int64_t> ReadIndices(const py::handle& iterable) {
  std::vector<int64_t> indices;
  for (py::handle item : iterable) {
    try {
      indices.push_back(py::cast<int64_t>(item));
    } catch (const py::cast_error&) {
      throw Error("the sampler yielded " + py::repr(item).cast<std::string>() +
                  ", which is not an index (an int in the int64 range)");
    }
  }
  return indices;
}

// The value a Python object yields for one epoch, read once (under the GIL)
// and kept until another epoch is asked for.
template <typename T>
class EpochCache {
 public:
  template <typename Read>
  T Get(int64_t epoch, const char* what, Read read) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch != epoch_) {
      py::gil_scoped_acquire gil;
      value_ = CallPython(read, what);
      epoch_ = epoch;
    }
    return value_;
  }

 private:
  mutable std::mutex mu_;
  mutable int64_t epoch_ = -1;
  mutable T value_;
};

class PySampler : public Sampler {
 public:
  explicit PySampler(py::object sampler)
      : sampler_(std::make_shared<PyRef>(sampler)), size_(static_cast<int64_t>(py::len(sampler))) {}
  int64_t size() const override { return size_; }
  std::vector<int64_t> Indices(int64_t epoch) const override {
    return cache_.Get(epoch, "sampler", [&] { return ReadIndices(sampler_->get()); });
  }

 private:
  std::shared_ptr<PyRef> sampler_;
  int64_t size_;
  EpochCache<std::vector<int64_t>> cache_;
};

class PyBatchSampler : public BatchSampler {
 public:
  explicit PyBatchSampler(py::object sampler)
      : sampler_(std::make_shared<PyRef>(sampler)), size_(static_cast<int64_t>(py::len(sampler))) {}
  int64_t size() const override { return size_; }
  EpochPlan Plan(int64_t epoch) const override {
    return cache_.Get(epoch, "batch_sampler", [&] {
      EpochPlan plan;
      for (py::handle batch : sampler_->get()) plan.Add(ReadIndices(batch));
      return plan;
    });
  }

 private:
  std::shared_ptr<PyRef> sampler_;
  int64_t size_;
  EpochCache<EpochPlan> cache_;
};

std::shared_ptr<const Sampler> ToSampler(const py::object& sampler) {
  if (sampler.is_none()) return nullptr;
  if (py::isinstance<Sampler>(sampler)) return sampler.cast<std::shared_ptr<Sampler>>();
  return std::make_shared<PySampler>(sampler);
}

std::shared_ptr<const BatchSampler> ToBatchSampler(const py::object& sampler) {
  if (sampler.is_none()) return nullptr;
  if (py::isinstance<BatchSampler>(sampler)) return sampler.cast<std::shared_ptr<BatchSampler>>();
  return std::make_shared<PyBatchSampler>(sampler);
}

// A Python collate_fn: the samples go to Python as the dataset returned them
// (copies: sample memory is reused), and what it returns is the batch, as it
// returned it (torch's contract, every front end's): attached to the slot,
// not copied into fields. With `in_worker` the process that loaded the batch
// runs it when it can (worker_collate.h).
CollateFn MakePyCollate(py::object fn, std::shared_ptr<Structure> samples,
                        std::shared_ptr<WorkerCollate> in_worker,
                        std::shared_ptr<HeldObjects> held) {
  auto ref = std::make_shared<PyRef>(std::move(fn));
  return [ref, samples, in_worker, held](std::span<const Sample* const> in, BatchBuilder& out) {
    py::gil_scoped_acquire gil;
    LoaderCodeScope running(samples.get());
    try {
      py::object result;
      if (!in_worker || !in_worker->TryCollate(in, &result)) {
        py::list items;
        for (const Sample* sample : in) {
          // A sample loaded in this process is the object its dataset returned.
          if (held) {
            if (py::object kept = held->Take(*sample)) {
              items.append(kept);
              continue;
            }
          }
          // A sample its worker process kept for collate_fn is loaded again.
          std::optional<HeldOrigin> origin = in_worker ? HeldOriginOf(*sample) : std::nullopt;
          items.append(origin ? in_worker->LoadAgain(*origin) : SampleToPython(*sample, *samples));
        }
        result = ref->get()(items);
      }
      out.Attach(std::make_shared<PyRef>(std::move(result)));
    } catch (py::error_already_set& e) {
      if (IsInterrupt(e) || running.misuse()) throw PyInterrupt{std::move(e)};  // never a batch error
      throw SampleError(FailureKind::kCollate, "", "collate_fn raised " + PythonErrorText(e), -1,
                        PythonErrorOrigin(e));
    }
  };
}

// ---------------------------------------------------------------------------
// The loader.

class PyLoader {
 public:
  PyLoader(std::shared_ptr<DataLoader> loader, std::shared_ptr<Structure> structure,
           std::shared_ptr<extension::WorkerProcesses> processes = nullptr)
      : loader_(std::move(loader)),
        structure_(std::move(structure)),
        processes_(std::move(processes)),
        owner_pid_(::getpid()) {}
  // The cycle collector frees a loader left in a reference cycle on whatever
  // thread allocates next, which may be one of the loader's own worker
  // threads running its collate_fn or dataset: closing there would join the
  // thread that closes (std::terminate). Another thread closes it then.
  ~PyLoader() {
    if (::getpid() == owner_pid_ && InsideLoader(key_)) {
      CloseOnAnotherThread();
    } else {
      Close();
    }
  }

  // The next batch shaped as the samples were, or None at the end of an epoch.
  // Waits in slices of 100 ms so that Ctrl-C (a pending signal) interrupts a
  // long wait for data.
  // `dlpack_leaves`: numeric fields as BatchArrays (dlpack_export.h), for a
  // front end that imports them into its framework.
  py::object Next(bool dlpack_leaves) {
    CheckNotInsideLoader(key_, "__next__()");
    // With num_workers = 0 a Python dataset's samples run in this call and
    // seed `random` and `numpy.random`: the caller gets its state back after
    // it (once per batch; saving costs ~35 us, too much per sample).
    std::optional<SavedPythonGenerators> saved;
    if (seeds_caller_generators_) saved.emplace();
    Batch batch;
    while (true) {
      NextStatus status;
      RaisingInterrupts([&] {
        LoaderCallWithoutGil nogil;
        std::lock_guard<std::mutex> lock(mu_);
        status = Get().TryNext(std::chrono::milliseconds(100), &batch);
      });
      if (status == NextStatus::kEnd) return py::none();
      if (status == NextStatus::kBatch) {
        // A collate_fn's own object: the batch is it.
        if (std::shared_ptr<const void> kept = batch.attachment()) {
          return static_cast<const PyRef*>(kept.get())->get();
        }
        return ShapeBatch(batch, *structure_, dlpack_leaves);
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }

  // Counts the samples of one epoch without going through Python; returns
  // (samples, seconds). The reference for the Python loop's speed.
  std::pair<int64_t, double> DrainEpoch() {
    CheckNotInsideLoader(key_, "drain_epoch()");
    return RaisingInterrupts([&] { return DrainEpochWithoutGil(); });
  }
  std::pair<int64_t, double> DrainEpochWithoutGil() {
    LoaderCallWithoutGil nogil;
    std::lock_guard<std::mutex> lock(mu_);
    auto start = std::chrono::steady_clock::now();
    int64_t samples = 0;
    for (const Batch& batch : Get()) samples += batch.size();
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return {samples, elapsed.count()};
  }

  // close() from Python: refused from the loader's own code, which runs on a
  // thread that closing would join (or inside the Next() it would wait for).
  void CloseChecked() {
    CheckNotInsideLoader(key_, "close()");
    Close();
  }

  // The samples' Structure; it identifies this loader's Python code
  // (LoaderCodeScope).
  void set_samples(std::shared_ptr<Structure> samples) {
    key_ = samples.get();
    samples_ = std::move(samples);
  }
  // The first sample's schema (feedline._feedline.SampleSchema), or None
  // before it or for a native dataset's declared fields.
  py::object SampleSchemaObject() const { return SchemaToPython(*samples_); }
  // Whether Next() must give the caller its `random` / `numpy.random` state
  // back (a Python dataset with num_workers = 0).
  void set_seeds_caller_generators(bool value) { seeds_caller_generators_ = value; }

  // Joins the workers. Without the GIL: a worker may be waiting for it.
  void Close() {
    if (::getpid() != owner_pid_) {
      // A copy inherited by a worker process (collected there): the engine's
      // threads and locks stayed in the parent, so leak it rather than wait.
      new std::shared_ptr<DataLoader>(std::move(loader_));
      new std::shared_ptr<extension::WorkerProcesses>(std::move(processes_));
      return;
    }
    LoaderCallWithoutGil nogil;
    // Worker processes first: it wakes engine threads waiting on them.
    if (processes_) processes_->Shutdown();
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<DataLoader> loader;
    {
      std::lock_guard<std::mutex> pointer_lock(pointer_mu_);
      loader = std::move(loader_);
    }
  }

  // Close() on a thread of its own, left to end by itself: for a loader
  // freed on one of its worker threads, which returns to the engine, finishes
  // its task and is joined by that thread. No Next() runs (it holds the
  // loader), so mu_ is not needed.
  void CloseOnAnotherThread() {
    struct Held {
      std::shared_ptr<extension::WorkerProcesses> processes;
      std::shared_ptr<DataLoader> loader;  // destroyed first, as in Close()
    };
    auto* held = new Held{std::move(processes_), nullptr};
    {
      std::lock_guard<std::mutex> pointer_lock(pointer_mu_);
      held->loader = std::move(loader_);
    }
    try {
      std::thread([held] {
        // Worker processes first, as in Close().
        if (held->processes) held->processes->Shutdown();
        delete held;
      }).detach();
    } catch (const std::system_error&) {
      // No thread to be had: the loader is left open (its memory and
      // threads stay until the process ends) rather than joined from itself.
    }
  }

  // Without waiting for a running Next(): stats may be read from any thread.
  // `num_workers`, if given, receives the loader's (for the loop report).
  StatsSnapshot Stats(int* num_workers = nullptr) {
    GilRelease nogil;
    std::shared_ptr<DataLoader> loader;
    {
      std::lock_guard<std::mutex> lock(pointer_mu_);
      loader = loader_;
    }
    if (!loader) throw std::runtime_error("the DataLoader is closed");
    if (num_workers != nullptr) *num_workers = loader->options().num_workers;
    return loader->stats();
  }

  template <typename F>
  auto Call(F&& f, const char* what = "a method") {
    CheckNotInsideLoader(key_, what);
    return RaisingInterrupts([&] {
      LoaderCallWithoutGil nogil;
      std::lock_guard<std::mutex> lock(mu_);
      return f(Get());
    });
  }

  // Reports of the training loop (loop_report.h) go to `callback`, a Python
  // callable taking the report as a dict, on the thread iterating. It runs
  // as the loader's own code: next() or close() from it is refused.
  void SetReport(int64_t every_steps, py::object callback) {
    auto ref = std::make_shared<PyRef>(std::move(callback));
    const void* key = key_;
    Call([&](DataLoader& d) {
      d.SetReport(every_steps, [ref, key](const LoopReport& report) {
        py::gil_scoped_acquire gil;
        LoaderCodeScope running(key);
        try {
          ref->get()(LoopReportToPython(report));
        } catch (py::error_already_set& e) {
          throw PyInterrupt{std::move(e)};  // raised from next() as it is
        }
      });
    });
  }

  py::object Layout() const { return StructureToPython(*structure_); }
  std::shared_ptr<Structure> samples_;

  const void* key_ = nullptr;

  const char* worker_mode() const { return processes_ ? "process" : "thread"; }
  std::vector<int64_t> WorkerPids() const {
    return processes_ ? processes_->worker_pids() : std::vector<int64_t>{};
  }
  int64_t WorkerRestarts() const { return processes_ ? processes_->restarts() : 0; }

 private:
  DataLoader& Get() {
    if (!loader_) throw std::runtime_error("the DataLoader is closed");
    return *loader_;
  }

  std::mutex mu_;          // one caller at a time, as the engine requires
  std::mutex pointer_mu_;  // guards loader_ itself, for Stats()
  std::shared_ptr<DataLoader> loader_;
  std::shared_ptr<Structure> structure_;
  std::shared_ptr<extension::WorkerProcesses> processes_;  // worker_mode "process" only
  bool seeds_caller_generators_ = false;  // a Python dataset loaded in the caller's thread
  pid_t owner_pid_;  // the process that made the loader; see Close()
};

std::unique_ptr<PyLoader> MakeLoader(py::object dataset, bool iterable, py::object batch_size,
                                     bool shuffle, py::object sampler, py::object batch_sampler,
                                     int num_workers, py::object collate_fn, bool drop_last,
                                     int prefetch_factor, bool persistent_workers, double timeout,
                                     py::object worker_init_fn, uint64_t seed,
                                     const std::string& error_policy, py::object fields,
                                     const std::string& worker_mode, bool use_shared_memory,
                                     bool in_order, int64_t memory_budget_bytes,
                                     bool torch_bfloat16,
                                     bool seed_samples, bool batch_per_worker) {
  if (batch_size.is_none()) {
    throw Error("batch_size=None (no automatic batching) is not supported; give a batch size");
  }
  // ~31 years: beyond that the milliseconds would not fit the engine's clock.
  if (!std::isfinite(timeout) || timeout < 0 || timeout > 1e9) {
    throw Error("DataLoader: timeout must be a finite number of seconds from 0 to 1e9, got " +
                py::repr(py::float_(timeout)).cast<std::string>());
  }
  LoaderOptions options;
  options.batch_size = batch_size.cast<int64_t>();
  options.shuffle = shuffle;
  options.sampler = ToSampler(sampler);
  options.batch_sampler = ToBatchSampler(batch_sampler);
  options.num_workers = num_workers;
  options.drop_last = drop_last;
  options.prefetch_factor = prefetch_factor;
  options.persistent_workers = persistent_workers;
  options.in_order = in_order;
  options.batch_per_worker = batch_per_worker;
  options.memory_budget_bytes = memory_budget_bytes;  // checked by the engine (>= 0)
  // Rounded up: a timeout below a millisecond must not become "no limit".
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout * 1000.0)));
  options.seed = seed;
  options.error_policy = ParseErrorPolicy(error_policy);
  options.worker_mode = ParseWorkerMode(worker_mode);
  // num_workers "auto" (kAuto): the engine starts one worker per core share
  // and sets how many are active; the Python side sizes its workers the same.
  const int worker_count = num_workers == kAuto ? AutoMaxWorkers() : num_workers;
  const bool native = py::isinstance<Dataset>(dataset);
  // On a worker thread (the factory drops it for worker processes, whose
  // program runs worker_init_fn itself).
  if (!worker_init_fn.is_none()) {
    auto fn = std::make_shared<PyRef>(worker_init_fn);
    options.worker_init = [fn](int worker_id) {
      py::gil_scoped_acquire gil;
      CallPython([&] { fn->get()(worker_id); }, "worker_init_fn");
    };
  }

  // The shape of a sample: declared by a native dataset, learned from the
  // first sample of a Python one.
  auto samples = std::make_shared<Structure>();
  if (!fields.is_none())
    samples->Declare(Structure::kTuple, fields.cast<std::vector<std::string>>());
  // A native dataset's str / bytes fields (a ColumnarDataset's string columns).
  if (py::isinstance<Dataset>(dataset) && py::hasattr(dataset, "object_fields"))
    samples->DeclareObjectFields(dataset.attr("object_fields").cast<std::vector<std::string>>());
  // feedline.torch's batches are torch tensors, so they can hold bfloat16.
  if (torch_bfloat16) samples->DeliverTorchBFloat16();
  // A collate_fn a front end marked for the worker (its `in_worker`) runs in
  // the worker processes of a Python map-style dataset, each batch loaded
  // by one of them (worker_collate.h).
  std::shared_ptr<WorkerCollate> worker_collate;
  if (!native && !iterable && !collate_fn.is_none() && py::hasattr(collate_fn, "in_worker") &&
      extension::LoadsInWorkerProcesses(options.worker_mode, /*holds_global_lock=*/true,
                                       num_workers)) {
    worker_collate = std::make_shared<WorkerCollate>(std::make_shared<PyRef>(dataset),
                                                     worker_count, seed_samples);
    options.batch_per_worker = true;
  }
  // A Python dataset's samples reach a collate_fn as the dataset returned
  // them, whatever their structure, as torch and Paddle hand them over.
  // Those loaded in this process (threads, num_workers=0) are kept as the
  // objects themselves (held_objects.h).
  std::shared_ptr<HeldObjects> held;
  if (!native && !collate_fn.is_none()) {
    samples->CarryWhole();
    held = std::make_shared<HeldObjects>();
  }
  if (!collate_fn.is_none()) {
    options.collate_fn = MakePyCollate(collate_fn, samples, worker_collate, held);
  }

  // The adapters for both places a sample may load (a thread, a worker
  // process); BuildDataLoader decides which from worker_mode.
  extension::LoaderSpec spec;
  spec.holds_global_lock = !native;  // a Python __getitem__ / __next__ holds the GIL
  spec.use_shared_memory = use_shared_memory;
  if (native) {
    auto native_dataset = dataset.cast<std::shared_ptr<Dataset>>();
    // A crash in native code ends one worker process, which is replaced
    // (src/process/README.md); the fork is made safe for the interpreter.
    spec.worker_program =
        std::make_shared<PyNativeWorkerProgram>(native_dataset, options.worker_init);
    spec.dataset = std::move(native_dataset);
  } else {
    auto program =
        std::make_shared<PythonWorkerProgram>(dataset, worker_init_fn, seed_samples, samples);
    if (worker_collate) {
      // A batch and its substitutes, with room for a batch the parent
      // collated itself (their rows are dropped once a later batch is).
      program->CollateInWorkers(collate_fn.attr("in_worker"), worker_collate,
                                2 * options.batch_size + 64);
    }
    spec.worker_program = std::move(program);
    if (iterable) {
      spec.stream = std::make_shared<PyIterableDataset>(dataset, worker_count, seed, samples, held);
    } else {
      spec.dataset =
          std::make_shared<PyDataset>(dataset, worker_count, samples, seed_samples, held);
    }
  }
  spec.options = std::move(options);
  extension::BuiltLoader built;
  {
    LoaderCallWithoutGil nogil;
    built = extension::BuildDataLoader(std::move(spec));
  }
  std::shared_ptr<DataLoader> loader = std::move(built.loader);
  std::shared_ptr<extension::WorkerProcesses> workers = std::move(built.processes);
  if (worker_collate) worker_collate->set_workers(workers);
  auto py_loader = std::make_unique<PyLoader>(std::move(loader), samples, std::move(workers));
  py_loader->set_samples(samples);
  py_loader->set_seeds_caller_generators(seed_samples && !native && !iterable &&
                                         worker_count == 0);
  return py_loader;
}

// A LoaderState as a plain dict of ints and strings (safe for JSON and
// torch.save), and back. Keys other than epoch and next_batch may be missing
// (a state written by hand); unknown keys are refused.
py::dict StateToPython(const LoaderState& s) {
  const LoaderFingerprint& f = s.fingerprint;
  return py::dict(py::arg("epoch") = s.epoch, py::arg("next_batch") = s.next_batch,
                  py::arg("dataset_size") = f.dataset_size, py::arg("seed") = f.seed,
                  py::arg("sampler") = f.sampler, py::arg("batch_size") = f.batch_size,
                  py::arg("drop_last") = f.drop_last, py::arg("num_replicas") = f.num_replicas,
                  py::arg("rank") = f.rank, py::arg("num_batches") = f.num_batches,
                  py::arg("plan_hash") = f.plan_hash);
}

LoaderState StateFromPython(const py::dict& d) {
  LoaderState s;
  LoaderFingerprint& f = s.fingerprint;
  auto integer = [&](const char* key, int64_t* out) {
    if (!d.contains(key)) return false;
    py::object value = d[key];
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
      throw py::type_error(std::string("load_state_dict: '") + key + "' must be an int, got " +
                           py::str(value.get_type().attr("__name__")).cast<std::string>());
    }
    *out = value.cast<int64_t>();
    return true;
  };
  auto text = [&](const char* key, std::string* out) {
    if (!d.contains(key)) return;
    py::object value = d[key];
    if (!py::isinstance<py::str>(value)) {
      throw py::type_error(std::string("load_state_dict: '") + key + "' must be a str");
    }
    *out = value.cast<std::string>();
  };
  for (auto item : d) {
    static const char* const kKeys[] = {"epoch",        "next_batch", "dataset_size", "seed",
                                        "sampler",      "batch_size", "drop_last",
                                        "num_replicas", "rank",       "num_batches",
                                        "plan_hash"};
    const std::string key = py::str(item.first).cast<std::string>();
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      throw py::value_error("load_state_dict: unknown key '" + key +
                            "' (is this a DataLoader's state_dict()?)");
    }
  }
  if (!integer("epoch", &s.epoch) || !integer("next_batch", &s.next_batch)) {
    throw py::value_error("load_state_dict: the state needs 'epoch' and 'next_batch'");
  }
  integer("dataset_size", &f.dataset_size);
  integer("batch_size", &f.batch_size);
  integer("drop_last", &f.drop_last);
  integer("num_replicas", &f.num_replicas);
  integer("rank", &f.rank);
  integer("num_batches", &f.num_batches);
  text("seed", &f.seed);
  text("sampler", &f.sampler);
  text("plan_hash", &f.plan_hash);
  return s;
}

// What the tuner chose and when (num_workers / prefetch_factor "auto").
py::dict TunerToPython(const TunerStats& t) {
  py::list log;
  for (const TunerDecision& d : t.log) {
    log.append(py::dict(py::arg("at_s") = d.at_s, py::arg("batch") = d.batch,
                        py::arg("workers") = d.workers, py::arg("slots") = d.slots,
                        py::arg("samples_per_s") = d.samples_per_s,
                        py::arg("reason") = d.reason));
  }
  return py::dict(py::arg("enabled") = t.enabled, py::arg("workers") = t.workers,
                  py::arg("slots") = t.slots, py::arg("start_workers") = t.start_workers,
                  py::arg("start_slots") = t.start_slots, py::arg("max_workers") = t.max_workers,
                  py::arg("costly_workers") = t.costly_workers,
                  py::arg("memory_budget_bytes") = t.memory_budget_bytes,
                  py::arg("slot_bytes") = t.slot_bytes, py::arg("decisions") = t.decisions,
                  py::arg("log") = log);
}

py::dict StatsToPython(const StatsSnapshot& s) {
  py::dict stages;
  for (int i = 0; i < kNumStages; ++i) {
    stages[StageName(static_cast<Stage>(i))] = static_cast<double>(s.stage_ns[i]) * 1e-9;
  }
  py::list workers;
  for (const WorkerStats& w : s.workers) {
    workers.append(py::dict(py::arg("busy_s") = static_cast<double>(w.busy_ns) * 1e-9,
                            py::arg("samples") = w.samples));
  }
  return py::dict(py::arg("samples") = s.samples, py::arg("batches") = s.batches,
                  py::arg("errors") = s.errors, py::arg("skipped") = s.skipped,
                  py::arg("replaced") = s.replaced,
                  py::arg("failed_substitutes") = s.failed_substitutes,
                  py::arg("images_decoded") = s.images_decoded,
                  py::arg("errors_by_reason") = s.errors_by_reason, py::arg("stage_s") = stages,
                  py::arg("consumer_wait_s") = static_cast<double>(s.consumer_wait_ns) * 1e-9,
                  py::arg("first_batch_s") = static_cast<double>(s.first_batch_ns) * 1e-9,
                  py::arg("elapsed_s") = static_cast<double>(s.elapsed_ns) * 1e-9,
                  py::arg("wait_fraction") = s.wait_fraction(), py::arg("workers") = workers,
                  py::arg("steps") = s.steps,
                  py::arg("step_s") = static_cast<double>(s.step_ns) * 1e-9,
                  py::arg("delivered_samples") = s.delivered_samples, py::arg("slots") = s.slots,
                  py::arg("slot_bytes") = s.slot_bytes);
}

// Sample `index` of a native dataset as a dict of arrays (copies).
py::dict GetSample(const Dataset& dataset, int64_t index, int64_t epoch, uint64_t seed) {
  CheckIndex(index, dataset.size());  // IndexError also ends Python's for-loop over a dataset
  auto sample = std::make_shared<Sample>();
  try {
    py::gil_scoped_release nogil;
    SampleContext ctx(seed, epoch, index);
    dataset.Get(index, *sample, ctx);
  } catch (const SampleError& e) {
    // As the loader reports it: with the index and the source.
    std::string source = e.source();
    if (source.empty()) {
      try {
        source = dataset.Source(index);
      } catch (const std::exception&) {
      }
    }
    SampleError named(e.kind(), source, e.message(), index, e.origin());
    if (e.kind() == FailureKind::kTimeout) throw TimeoutError(named);
    throw named;
  }
  py::dict out;
  for (int i = 0; i < sample->num_fields(); ++i) {
    out[py::str(sample->field_name(i))] = CopyToArray(sample->field(i));
  }
  return out;
}

}  // namespace

void BindCore(py::module_& m) {
  // Datasets. Native datasets are shared with the loader; Python wrappers
  // (feedline.io, feedline.vision.datasets) hold them as `_native`.
  py::class_<Dataset, std::shared_ptr<Dataset>>(m, "_Dataset")
      .def("__len__", &Dataset::size)
      .def("get", &GetSample, py::arg("index"), py::arg("epoch") = 0, py::arg("seed") = 0)
      .def("source", &Dataset::Source, py::arg("index"));
  py::class_<Subset, Dataset, std::shared_ptr<Subset>>(m, "_Subset")
      .def(py::init<std::shared_ptr<const Dataset>, std::vector<int64_t>>(), py::arg("dataset"),
           py::arg("indices"));
  py::class_<Concat, Dataset, std::shared_ptr<Concat>>(m, "_Concat")
      .def(py::init<std::vector<std::shared_ptr<const Dataset>>>(), py::arg("datasets"));

  // Samplers.
  py::class_<Sampler, std::shared_ptr<Sampler>>(m, "_Sampler")
      .def("__len__", &Sampler::size)
      .def(
          "indices",
          [](const Sampler& s, int64_t epoch) {
            std::vector<int64_t> indices;
            {
              py::gil_scoped_release nogil;
              indices = s.Indices(epoch);
            }
            return ToArray(indices);
          },
          py::arg("epoch"));
  py::class_<SequentialSampler, Sampler, std::shared_ptr<SequentialSampler>>(m,
                                                                             "_SequentialSampler")
      .def(py::init<int64_t>(), py::arg("n"));
  py::class_<RandomSampler, Sampler, std::shared_ptr<RandomSampler>>(m, "_RandomSampler")
      .def(py::init<int64_t, uint64_t, bool, std::optional<int64_t>>(), py::arg("n"),
           py::arg("seed"), py::arg("replacement") = false, py::arg("num_samples") = py::none());
  py::class_<SubsetRandomSampler, Sampler, std::shared_ptr<SubsetRandomSampler>>(
      m, "_SubsetRandomSampler")
      .def(py::init<std::vector<int64_t>, uint64_t>(), py::arg("indices"), py::arg("seed"));
  py::class_<WeightedRandomSampler, Sampler, std::shared_ptr<WeightedRandomSampler>>(
      m, "_WeightedRandomSampler")
      .def(py::init<std::vector<double>, int64_t, uint64_t, bool>(), py::arg("weights"),
           py::arg("num_samples"), py::arg("seed"), py::arg("replacement") = true);
  py::class_<ClassBalancedSampler, Sampler, std::shared_ptr<ClassBalancedSampler>>(
      m, "_ClassBalancedSampler")
      .def(py::init<const std::vector<int64_t>&, uint64_t, std::optional<int64_t>>(),
           py::arg("labels"), py::arg("seed"), py::arg("num_samples") = py::none());

  // Batch samplers; plan(epoch) gives (indices, offsets) like EpochPlan.
  py::class_<BatchSampler, std::shared_ptr<BatchSampler>>(m, "_BatchSampler")
      .def("__len__", &BatchSampler::size)
      .def("plan", [](const BatchSampler& s, int64_t epoch) {
        EpochPlan plan;
        {
          py::gil_scoped_release nogil;
          plan = s.Plan(epoch);
        }
        return py::make_tuple(ToArray(plan.indices), ToArray(plan.offsets));
      });
  py::class_<FixedBatchSampler, BatchSampler, std::shared_ptr<FixedBatchSampler>>(
      m, "_FixedBatchSampler")
      .def(py::init([](const py::object& sampler, int64_t batch_size, bool drop_last) {
             return std::make_shared<FixedBatchSampler>(ToSampler(sampler), batch_size, drop_last);
           }),
           py::arg("sampler"), py::arg("batch_size"), py::arg("drop_last"));
  py::class_<GroupedBatchSampler, BatchSampler, std::shared_ptr<GroupedBatchSampler>>(
      m, "_GroupedBatchSampler")
      .def(py::init([](const py::object& sampler, std::vector<int64_t> group_ids,
                       int64_t batch_size) {
             return std::make_shared<GroupedBatchSampler>(ToSampler(sampler), std::move(group_ids),
                                                          batch_size);
           }),
           py::arg("sampler"), py::arg("group_ids"), py::arg("batch_size"));
  m.def("_aspect_ratio_groups",
        [](const std::vector<int64_t>& widths, const std::vector<int64_t>& heights, int k) {
          return ToArray(AspectRatioGroups(widths, heights, k));
        },
        py::arg("widths"), py::arg("heights"), py::arg("k"));
  py::class_<DistributedBatchSampler, BatchSampler, std::shared_ptr<DistributedBatchSampler>>(
      m, "_DistributedBatchSampler")
      .def(py::init([](int64_t n, int64_t batch_size, int64_t num_replicas, int64_t rank,
                       bool shuffle, bool drop_last, uint64_t seed, const std::string& partition,
                       bool pad, int64_t resume_epoch, int64_t resume_position) {
             DistributedBatchSampler::Options o;
             o.shuffle = shuffle;
             o.drop_last = drop_last;
             o.seed = seed;
             if (partition == "paddle") {
               o.partition = DistributedPartition::kPaddle;
             } else if (partition == "torch") {
               o.partition = DistributedPartition::kTorch;
             } else {
               throw Error("partition must be 'paddle' or 'torch', got '" + partition + "'");
             }
             o.pad = pad;
             o.resume_epoch = resume_epoch;
             o.resume_position = resume_position;
             return std::make_shared<DistributedBatchSampler>(n, batch_size, num_replicas, rank, o);
           }),
           py::arg("n"), py::arg("batch_size"), py::arg("num_replicas"), py::arg("rank"),
           py::arg("shuffle") = false, py::arg("drop_last") = false, py::arg("seed") = 0,
           py::arg("partition") = "paddle", py::arg("pad") = true, py::arg("resume_epoch") = -1,
           py::arg("resume_position") = 0)
      .def("set_epoch", &DistributedBatchSampler::set_epoch, py::arg("epoch"))
      .def("global_position", &DistributedBatchSampler::GlobalPosition, py::arg("epoch"),
           py::arg("batches_done"))
      .def("resume_from", &DistributedBatchSampler::ResumeFrom, py::arg("epoch"),
           py::arg("position"))
      .def(
          "valid_mask",
          [](const DistributedBatchSampler& s, int64_t epoch) {
            const std::vector<uint8_t> mask = s.ValidMask(epoch);
            py::array_t<bool> out(static_cast<py::ssize_t>(mask.size()));
            std::copy(mask.begin(), mask.end(), out.mutable_data());
            return out;
          },
          py::arg("epoch"))
      .def_property_readonly("num_samples", &DistributedBatchSampler::num_samples);
  // Rank and world size: explicit values first, then the launcher's variables.
  m.def(
      "_resolve_launch",
      [](std::optional<int64_t> world_size, std::optional<int64_t> rank) {
        const LaunchInfo info = ResolveLaunch(world_size, rank);
        py::dict d;
        d["rank"] = info.rank;
        d["world_size"] = info.world_size;
        d["local_rank"] = info.local_rank;
        d["local_world_size"] = info.local_world_size;
        d["source"] = info.source;
        return d;
      },
      py::arg("world_size") = py::none(), py::arg("rank") = py::none());
  py::class_<DynamicBatchSampler, BatchSampler, std::shared_ptr<DynamicBatchSampler>>(
      m, "_DynamicBatchSampler")
      .def(py::init([](std::vector<int64_t> lengths, int64_t max_tokens, int64_t max_batch_size,
                       int64_t bucket_size, bool shuffle, uint64_t seed) {
             DynamicBatchSampler::Options o{max_tokens, max_batch_size, bucket_size, shuffle, seed};
             return std::make_shared<DynamicBatchSampler>(std::move(lengths), o);
           }),
           py::arg("lengths"), py::arg("max_tokens"), py::arg("max_batch_size") = 0,
           py::arg("bucket_size") = 0, py::arg("shuffle") = true, py::arg("seed") = 0);

  // The loader. feedline.DataLoader (Python) builds one and iterates it.
  py::class_<PyLoader>(m, "_Loader")
      // What the tuner chose and when (num_workers / prefetch_factor "auto");
      // DataLoader.stats() puts it under "tuner".
      .def("tuner_stats", [](PyLoader& l) { return TunerToPython(l.Stats().tuner); })
      // Every argument by keyword: 24 of them, many booleans, which a
      // reordering would otherwise swap silently.
      .def(py::init(&MakeLoader), py::kw_only(), py::arg("dataset"), py::arg("iterable"),
           py::arg("batch_size"),
           py::arg("shuffle"), py::arg("sampler"), py::arg("batch_sampler"), py::arg("num_workers"),
           py::arg("collate_fn"), py::arg("drop_last"), py::arg("prefetch_factor"),
           py::arg("persistent_workers"), py::arg("timeout"), py::arg("worker_init_fn"),
           py::arg("seed"), py::arg("error_policy"), py::arg("fields"),
           py::arg("worker_mode") = "thread", py::arg("use_shared_memory") = true,
           py::arg("in_order") = true, py::arg("memory_budget_bytes") = 0,
           py::arg("torch_bfloat16") = false,
           py::arg("seed_samples") = true, py::arg("batch_per_worker") = false)
      .def("next", &PyLoader::Next, py::arg("dlpack_leaves") = false)
      .def("close", &PyLoader::CloseChecked)
      .def("drain_epoch", &PyLoader::DrainEpoch)
      .def("structure", &PyLoader::Layout)
      .def("sample_schema", &PyLoader::SampleSchemaObject)
      .def("__len__", [](PyLoader& l) { return l.Call([](DataLoader& d) { return d.size(); }); })
      .def("reset", [](PyLoader& l) { l.Call([](DataLoader& d) { d.Reset(); }); })
      .def("set_epoch",
           [](PyLoader& l, int64_t e) { l.Call([e](DataLoader& d) { d.set_epoch(e); }); })
      .def("epoch", [](PyLoader& l) { return l.Call([](DataLoader& d) { return d.epoch(); }); })
      .def("start_iteration",
           [](PyLoader& l) { l.Call([](DataLoader& d) { d.StartIteration(); }, "__iter__()"); })
      .def("state",
           [](PyLoader& l) {
             return StateToPython(l.Call([](DataLoader& d) { return d.state(); }));
           })
      .def("restore",
           [](PyLoader& l, const py::dict& state) {
             LoaderState s = StateFromPython(state);
             l.Call([&](DataLoader& d) { d.Restore(s); });
           })
      .def("stats",
           [](PyLoader& l) {
             int num_workers = 0;
             const StatsSnapshot snapshot = l.Stats(&num_workers);
             py::dict stats = StatsToPython(snapshot);
             stats["worker_restarts"] = l.WorkerRestarts();
             stats["loop"] = LoopReportToPython(Summarize(snapshot, {}, num_workers));
             return stats;
           })
      .def("set_report", &PyLoader::SetReport, py::arg("every_steps"), py::arg("callback"))
      .def("worker_mode", &PyLoader::worker_mode)
      .def("worker_pids", &PyLoader::WorkerPids);

  m.def("_worker_info", &CurrentWorkerInfo);
  // How a worker process this process reaped ended (None if unknown).
  m.def("_worker_exitcode", [](int64_t pid) -> py::object {
    std::optional<int> code = extension::ExitCodeOf(static_cast<pid_t>(pid));
    return code ? py::object(py::int_(*code)) : py::object(py::none());
  });
  // The one rule for sizes in bytes (feedline/byte_size.h), for the Python
  // arguments that take one: the bytes, or ValueError saying why not.
  m.def("_parse_byte_size", [](const std::string& text) {
    const ByteSizeParse size = ParseByteSize(text);
    if (!size.error.empty()) throw py::value_error(size.error);
    return size.bytes;
  });
}

void BindVision(py::module_& m);  // vision_module.cc
void BindHardExample(py::module_& m);  // training_loop_module.cc
void BindStorage(py::module_& m);  // storage_module.cc
void BindCommand(py::module_& m);  // command_module.cc
void BindText(py::module_& m);  // text_module.cc

}  // namespace feedline::python

PYBIND11_MODULE(_feedline, m) {
  m.doc() = "feedline: a C++ data loader for deep-learning training (binding layer)";
  // pybind11 before 2.12 reads numpy 2's array descriptors wrong (values
  // come out garbled): feedline/__init__.py refuses that pairing at import.
  m.attr("_pybind11_version") = py::make_tuple(PYBIND11_VERSION_MAJOR, PYBIND11_VERSION_MINOR);
  feedline::python::GilRelease::SetMainThread();
  feedline::python::RegisterExceptions(m);
  feedline::python::BindSampleSchema(m);
  feedline::python::BindBatchArray(m);
  feedline::python::BindCore(m);
  feedline::python::BindVision(m);
  feedline::python::BindStorage(m);
  feedline::python::BindText(m);
  feedline::python::BindHardExample(m);
  feedline::python::BindCommand(m);
}
