#include "feedline/data_loader.h"

#include <utility>

#include "src/loader/engine.h"

namespace feedline {

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : engine_(std::make_unique<internal::Engine>(std::move(dataset), std::move(options))) {}

DataLoader::DataLoader(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options)
    : engine_(std::make_unique<internal::Engine>(std::move(dataset), std::move(options))) {}

DataLoader::~DataLoader() = default;

int64_t DataLoader::size() const { return engine_->size(); }
void DataLoader::set_epoch(int64_t epoch) { engine_->set_epoch(epoch); }
int64_t DataLoader::epoch() const { return engine_->epoch(); }
std::optional<Batch> DataLoader::Next() { return engine_->Next(); }
NextStatus DataLoader::TryNext(std::chrono::milliseconds max_wait, Batch* out) {
  return engine_->TryNext(max_wait, out);
}
void DataLoader::Reset() { engine_->Reset(); }
void DataLoader::StartIteration() { engine_->BeginIteration(); }
LoaderState DataLoader::state() const { return engine_->state(); }
void DataLoader::Restore(const LoaderState& state) { engine_->Restore(state); }
StatsSnapshot DataLoader::stats() const { return engine_->stats(); }
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
  engine_->BeginIteration();
  return Iterator(this);
}

}  // namespace feedline
