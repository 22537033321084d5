#include "feedline/subset.h"

#include <utility>

#include "feedline/error.h"
#include "src/core/sample_context_access.h"

namespace feedline {

Subset::Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  if (!dataset_) throw Error("Subset: dataset must not be null");
  for (int64_t i : indices_) CheckIndex(i, dataset_->size());
}

void Subset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size());
  // The batch in the dataset's indices, for a dataset that draws from it.
  std::vector<int64_t> batch;
  batch.reserve(ctx.batch().size());
  for (int64_t i : ctx.batch()) {
    if (i >= 0 && i < size()) batch.push_back(indices_[static_cast<size_t>(i)]);
  }
  internal::ScopedBatch shown(ctx, batch);
  dataset_->Get(indices_[static_cast<size_t>(index)], out, ctx);
}

std::string Subset::Source(int64_t index) const {
  CheckIndex(index, size());
  return dataset_->Source(indices_[static_cast<size_t>(index)]);
}

int64_t Subset::Length(int64_t index) const {
  CheckIndex(index, size());
  return dataset_->Length(indices_[static_cast<size_t>(index)]);
}

}  // namespace feedline
