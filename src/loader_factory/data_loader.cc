#include "feedline/data_loader.h"

#include <string>
#include <utility>

#include "feedline/batch_sampler.h"
#include "feedline/error.h"
#include "src/loader/engine.h"
#include "src/loader/loop_monitor.h"
#include "src/loader/stats_collector.h"
#include "src/loader_factory/build_data_loader.h"

namespace feedline {
namespace {

int64_t BatchesPerEpoch(const internal::Engine& engine) {
  try {
    return engine.size();
  } catch (const Error&) {
    return -1;  // an IterableDataset
  }
}

// The training loop's steps are measured here, around the engine's calls
// (loop_monitor.h), not inside the engine.
std::unique_ptr<internal::LoopMonitor> MakeMonitor(const internal::Engine& engine) {
  return std::make_unique<internal::LoopMonitor>(
      internal::NowNs, [&engine] { return engine.stats(); },
      [&engine] { return BatchesPerEpoch(engine); }, engine.options().num_workers);
}

// The loader's batch sampler when it splits the data across ranks.
const DistributedBatchSampler* DistributedSamplerOf(const LoaderOptions& options) {
  return dynamic_cast<const DistributedBatchSampler*>(options.batch_sampler.get());
}

// A global position belongs to one global order: the dataset size, the
// sampler's seed and shuffle decide it (world size, rank, partition and
// padding may change).
void CheckGlobalPosition(const LoaderState& state, const DistributedBatchSampler& d) {
  const GlobalPosition& g = state.global;
  auto differs = [](const char* field, const std::string& recorded, const std::string& actual) {
    throw Error(std::string("Restore: the global position belongs to another order: ") + field +
                ": the state was taken with " + recorded + ", this loader's sampler has " +
                actual);
  };
  const int64_t size = state.fingerprint.dataset_size;
  if (size >= 0 && size != d.dataset_size()) {
    differs("dataset_size", std::to_string(size), std::to_string(d.dataset_size()));
  }
  if (!g.seed.empty() && g.seed != std::to_string(d.options().seed)) {
    differs("sampler seed", g.seed, std::to_string(d.options().seed));
  }
  if (g.shuffle >= 0 && (g.shuffle != 0) != d.options().shuffle) {
    differs("shuffle", g.shuffle != 0 ? "true" : "false", d.options().shuffle ? "true" : "false");
  }
  if (g.position > d.dataset_size() || g.epoch_start > g.position) {
    throw Error("Restore: global position " + std::to_string(g.position) + " (epoch start " +
                std::to_string(g.epoch_start) + ") is outside [0, " +
                std::to_string(d.dataset_size()) + "] for this dataset");
  }
}

internal::LoaderSpec MapSpec(std::shared_ptr<const Dataset> dataset, LoaderOptions options) {
  internal::LoaderSpec spec;
  spec.dataset = std::move(dataset);
  spec.options = std::move(options);
  return spec;
}

internal::LoaderSpec StreamSpec(std::shared_ptr<const IterableDataset> dataset,
                                LoaderOptions options) {
  internal::LoaderSpec spec;
  spec.stream = std::move(dataset);
  spec.options = std::move(options);
  return spec;
}

}  // namespace

// Built as every loader is (build_data_loader.h): a C++ dataset holds no
// global lock, and its worker processes run a NativeWorkerProgram.
DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : engine_(internal::BuildEngine(MapSpec(std::move(dataset), std::move(options))).engine),
      monitor_(MakeMonitor(*engine_)) {}

DataLoader::DataLoader(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options)
    : engine_(internal::BuildEngine(StreamSpec(std::move(dataset), std::move(options))).engine),
      monitor_(MakeMonitor(*engine_)) {}

DataLoader::DataLoader(std::unique_ptr<internal::Engine> engine)
    : engine_(std::move(engine)), monitor_(MakeMonitor(*engine_)) {}

DataLoader::~DataLoader() = default;

int64_t DataLoader::size() const { return engine_->size(); }
void DataLoader::set_epoch(int64_t epoch) { engine_->set_epoch(epoch); }
int64_t DataLoader::epoch() const { return engine_->epoch(); }
std::optional<Batch> DataLoader::Next() {
  monitor_->BeforeCall();
  std::optional<Batch> batch = engine_->Next();
  if (batch) {
    monitor_->AfterBatch(batch->size(), batch->epoch(), batch->index());
  } else {
    monitor_->AfterEnd();
  }
  return batch;
}
NextStatus DataLoader::TryNext(std::chrono::milliseconds max_wait, Batch* out) {
  monitor_->BeforeCall();
  const NextStatus status = engine_->TryNext(max_wait, out);
  if (status == NextStatus::kBatch) {
    monitor_->AfterBatch(out->size(), out->epoch(), out->index());
  } else if (status == NextStatus::kEnd) {
    monitor_->AfterEnd();
  }
  return status;
}
void DataLoader::Reset() {
  monitor_->Interrupted();
  engine_->Reset();
}
void DataLoader::StartIteration() {
  monitor_->Interrupted();
  engine_->BeginIteration();
}
LoaderState DataLoader::state() const {
  LoaderState state = engine_->state();
  if (const DistributedBatchSampler* d = DistributedSamplerOf(engine_->options())) {
    state.global.position = d->GlobalPosition(state.epoch, state.next_batch);
    state.global.epoch_start = d->GlobalPosition(state.epoch, 0);
    state.global.shuffle = d->options().shuffle ? 1 : 0;
    state.global.seed = std::to_string(d->options().seed);
  }
  return state;
}

void DataLoader::Restore(const LoaderState& state) {
  monitor_->Interrupted();
  const DistributedBatchSampler* d = DistributedSamplerOf(engine_->options());
  if (d == nullptr || state.global.position < 0) {
    engine_->Restore(state);
    return;
  }
  CheckGlobalPosition(state, *d);
  // ResumeFrom changes only the sampler's atomics, as set_epoch does; the
  // sampler was made by the caller, who may call either between epochs.
  auto* sampler = const_cast<DistributedBatchSampler*>(d);
  const LoaderFingerprint& f = state.fingerprint;
  const bool other_job = (f.num_replicas >= 0 && f.num_replicas != d->num_replicas()) ||
                         (f.rank >= 0 && f.rank != d->rank());
  if (!other_job) {
    // The same job: the exact, fingerprinted path. An epoch that was itself
    // resumed must be cut the same way for its plan to match.
    if (state.global.epoch_start > 0) sampler->ResumeFrom(state.epoch, state.global.epoch_start);
    engine_->Restore(state);
    return;
  }
  // Another world size or rank: this job splits the rest of the epoch's
  // global order and starts it at batch 0. The fingerprint's parts that do
  // not depend on the split are still checked.
  sampler->ResumeFrom(state.epoch, state.global.position);
  LoaderState rest(state.epoch, 0);
  rest.fingerprint.dataset_size = f.dataset_size;
  rest.fingerprint.seed = f.seed;
  rest.fingerprint.sampler = f.sampler;
  engine_->Restore(rest);
}
StatsSnapshot DataLoader::stats() const { return monitor_->Stats(); }
void DataLoader::SetReport(int64_t every_steps, std::function<void(const LoopReport&)> callback) {
  monitor_->SetReport(every_steps, std::move(callback));
}
const LoaderOptions& DataLoader::options() const { return engine_->options(); }

DataLoader::Iterator::Iterator(DataLoader* loader) : loader_(loader) { ++*this; }

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  batch_ = Batch();  // release the previous batch before waiting for the next
  std::optional<Batch> next = loader_->Next();
  if (next) {
    batch_ = std::move(*next);
  } else {
    loader_ = nullptr;
  }
  return *this;
}

DataLoader::Iterator DataLoader::begin() {
  StartIteration();
  return Iterator(this);
}

}  // namespace feedline
