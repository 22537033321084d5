#include "python/worker_collate.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "python/pickled_fields.h"
#include "python/python_seeding.h"
#include "python/sample_structure.h"

namespace feedline::python {
namespace {

// The field of a collated batch's pickle stream (pickled_fields.h).
constexpr const char* kPickleField = "batch";
// The only field of a placeholder for a kept sample: its HeldOrigin.
constexpr const char* kHeldField = "held_sample";

}  // namespace

void StageHeldSample(const HeldOrigin& origin, extension::TaskOutput& out) {
  out.SetSchema(WholeSampleSchema());
  const int64_t values[4] = {origin.index, origin.epoch, static_cast<int64_t>(origin.seed),
                             origin.worker};
  std::memcpy(out.Field(kHeldField, DType::kI64, Shape({4})).raw(), values, sizeof(values));
}

std::optional<HeldOrigin> HeldOriginOf(const Sample& sample) {
  if (sample.num_fields() != 1) return std::nullopt;
  const Tensor* field = sample.Find(kHeldField);
  if (field == nullptr || field->dtype() != DType::kI64 || field->shape() != Shape({4})) {
    return std::nullopt;
  }
  int64_t values[4];
  std::memcpy(values, field->raw(), sizeof(values));
  return HeldOrigin{values[0], values[1], static_cast<uint64_t>(values[2]), values[3]};
}

void WorkerCollate::Record(int worker, int64_t process, const Sample* out) {
  std::lock_guard<std::mutex> lock(mu_);
  Counter& counter = counters_[worker];
  if (counter.process != process) counter = Counter{process, 0};  // a new process counts from 0
  origins_[out] = Origin{worker, process, counter.next++, std::this_thread::get_id()};
}

bool WorkerCollate::TryCollate(std::span<const Sample* const> samples, py::object* result) {
  if (samples.empty()) return false;
  std::shared_ptr<extension::WorkerProcesses> workers;
  std::vector<int64_t> replies;
  int worker = -1;
  int64_t process = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers = workers_.lock();
    if (!workers) return false;
    const std::thread::id me = std::this_thread::get_id();
    for (const Sample* sample : samples) {
      auto it = origins_.find(sample);
      if (it == origins_.end()) return false;
      const Origin& origin = it->second;
      // Only the thread that loaded the rows talks to their process: no
      // other thread is then using its socket.
      if (origin.thread != me) return false;
      if (worker < 0) {
        worker = origin.worker;
        process = origin.process;
      } else if (origin.worker != worker || origin.process != process) {
        return false;
      }
      replies.push_back(origin.seq);
    }
  }
  // Shared by the arrays made over its buffers: they outlive this call.
  std::shared_ptr<const Sample> batch;
  {
    py::gil_scoped_release nogil;
    batch = workers->CollateIfIdle(worker, process, replies);
  }
  if (!batch) return false;
  // Its arrays view the memory the worker wrote them in: a large array of
  // the batch arrives as a view, not a copy.
  *result = LoadPickledViews(std::move(batch), kPickleField);
  return true;
}

py::object WorkerCollate::LoadAgain(const HeldOrigin& origin) const {
  WorkerInfoScope info(static_cast<int>(origin.worker), num_workers_, origin.seed, origin.epoch,
                       dataset_);
  try {
    SavedPythonGenerators callers;
    if (seed_samples_) SeedPythonGenerators(origin.seed, origin.epoch, origin.index);
    return RowLoader(dataset_->get())(origin.index);  // rare: made for the row
  } catch (py::error_already_set& e) {
    if (IsInterrupt(e)) throw;
    throw SampleError(FailureKind::kException, "",
                      "loading the sample again for collate_fn in the training process "
                      "(its worker process no longer held it) raised " +
                          PythonErrorText(e),
                      origin.index, PythonErrorOrigin(e));
  }
}

void WorkerHeldItems::Keep(const py::object& item) {
  if (!active()) return;
  held_.emplace_back(next_seq_++, item);
  while (static_cast<int64_t>(held_.size()) > limit_) held_.pop_front();
}

bool WorkerHeldItems::Collate(std::span<const int64_t> replies, extension::TaskOutput& out) {
  py::list items;
  int64_t last = -1;
  for (const int64_t seq : replies) {
    auto it = std::lower_bound(held_.begin(), held_.end(), seq,
                               [](const auto& held, int64_t s) { return held.first < s; });
    if (!active() || it == held_.end() || it->first != seq) return false;  // not held (any more)
    items.append(it->second);
    last = std::max(last, seq);
  }
  // What came before the batch's last row was collated, skipped or
  // replaced, or belongs to a batch the parent collates itself.
  while (!held_.empty() && held_.front().first <= last) held_.pop_front();
  try {
    FillPickledFields(collate_fn_(items), kPickleField,
                      [&](const std::string& name, DType dtype, const Shape& shape) {
                        return out.Field(name, dtype, shape);
                      });
  } catch (py::error_already_set& e) {
    // Raised by collate_fn itself, or by pickling what it returned: a batch
    // error, as the parent's own collate reports it; an interrupt passes
    // through as itself.
    if (IsInterrupt(e)) throw;
    throw SampleError(FailureKind::kCollate, "", "collate_fn raised " + PythonErrorText(e), -1,
                      PythonErrorOrigin(e));
  }
  return true;
}

}  // namespace feedline::python
