// Concat: several datasets end to end (paddle.io.ConcatDataset). Index i
// maps to the dataset whose range holds it. FixedFields are those of the
// first dataset when all parts declare the same ones, otherwise none.
// Thread safety: immutable, like every Dataset.
#ifndef FEEDLINE_CONCAT_H_
#define FEEDLINE_CONCAT_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"

namespace feedline {

class FEEDLINE_EXPORT Concat : public Dataset {
 public:
  // Throws Error if `parts` is empty or holds a null dataset.
  explicit Concat(std::vector<std::shared_ptr<const Dataset>> parts);

  int64_t size() const override { return offsets_.back(); }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  std::string Source(int64_t index) const override;
  int64_t Length(int64_t index) const override;
  std::vector<FieldSpec> FixedFields() const override;
  // Those of every part.
  std::vector<std::string> PaddedFields() const override;
  // Those of every part; the first part's for a field several declare.
  std::vector<PadMultiple> PadMultiples() const override;

 private:
  // (part, index within part) for a global index.
  std::pair<size_t, int64_t> Locate(int64_t index) const;

  std::vector<std::shared_ptr<const Dataset>> parts_;
  std::vector<int64_t> offsets_;  // offsets_[k] = first global index of part k; back() = size
};

}  // namespace feedline

#endif  // FEEDLINE_CONCAT_H_
