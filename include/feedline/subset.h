// Subset: the samples of another dataset at the given indices
// (paddle.io.Subset). Thread safety: immutable, like every Dataset.
#ifndef FEEDLINE_SUBSET_H_
#define FEEDLINE_SUBSET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"

namespace feedline {

class FEEDLINE_EXPORT Subset : public Dataset {
 public:
  // Throws IndexError if an index is outside [0, dataset->size()).
  Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices);

  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  int64_t Length(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override { return dataset_->FixedFields(); }
  std::vector<std::string> PaddedFields() const override { return dataset_->PaddedFields(); }
  std::vector<PadMultiple> PadMultiples() const override { return dataset_->PadMultiples(); }

 private:
  std::shared_ptr<const Dataset> dataset_;
  std::vector<int64_t> indices_;
};

}  // namespace feedline

#endif  // FEEDLINE_SUBSET_H_
