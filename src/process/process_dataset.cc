#include "src/process/process_dataset.h"

namespace feedline::internal {

ProcessDataset::ProcessDataset(std::shared_ptr<ProcessWorkers> workers, int64_t size,
                               std::shared_ptr<const Dataset> described_by)
    : workers_(std::move(workers)), size_(size), described_by_(std::move(described_by)) {}

void ProcessDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size_);
  workers_->LoadSample(index, ctx, out);
}

std::string ProcessDataset::Source(int64_t index) const {
  return described_by_ ? described_by_->Source(index) : std::string();
}

int64_t ProcessDataset::Length(int64_t index) const {
  return described_by_ ? described_by_->Length(index) : Dataset::Length(index);
}

std::vector<FieldSpec> ProcessDataset::FixedFields() const {
  return described_by_ ? described_by_->FixedFields() : std::vector<FieldSpec>{};
}

void ProcessDataset::EpochOrder(std::span<const int64_t> order) const {
  if (described_by_) described_by_->EpochOrder(order);
}

void ProcessDataset::EpochProgress(int64_t delivered) const {
  if (described_by_) described_by_->EpochProgress(delivered);
}

}  // namespace feedline::internal
