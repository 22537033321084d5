#include "feedline/subset.h"

#include <utility>

#include "feedline/error.h"

namespace feedline {

Subset::Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  if (!dataset_) throw Error("Subset: dataset must not be null");
  for (int64_t i : indices_) CheckIndex(i, dataset_->size());
}

void Subset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size());
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
