#include "tools/index_dataset.h"

#include "feedline/error.h"

namespace feedline::cli {

IndexDataset::IndexDataset(int64_t size) : size_(size) {
  if (size < 0) throw Error("synthetic dataset size must be >= 0, got " + std::to_string(size));
}

// No stage timer: all the time measured is the engine's ("other").
void IndexDataset::Get(int64_t index, Sample& out, SampleContext& /*ctx*/) const {
  CheckIndex(index, size_);
  out.SetScalar<int64_t>("index", index);
}

std::string IndexDataset::Source(int64_t index) const {
  return "synthetic:" + std::to_string(index);
}

std::vector<FieldSpec> IndexDataset::FixedFields() const {
  return {{"index", DType::kI64, Shape{}}};
}

}  // namespace feedline::cli
