#include "feedline/synth/index_dataset.h"

#include "feedline/error.h"

namespace feedline::synth {

IndexDataset::IndexDataset(int64_t size, IndexDatasetOptions options)
    : size_(size), options_(options) {
  if (size < 0) throw Error("synthetic dataset size must be >= 0, got " + std::to_string(size));
}

// No stage timer: all the time measured is the engine's ("other").
void IndexDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  CheckIndex(index, size_);
  out.SetScalar<int64_t>("index", index);
  if (options_.noise) {
    Tensor noise = out.Allocate("noise", DType::kF32, Shape{4});
    for (int k = 0; k < 4; ++k) noise.data<float>()[k] = static_cast<float>(ctx.rng().Uniform());
  }
}

std::string IndexDataset::Source(int64_t index) const {
  return "synthetic:" + std::to_string(index);
}

std::vector<FieldSpec> IndexDataset::FixedFields() const {
  if (!options_.fixed) return {};
  std::vector<FieldSpec> fields = {{"index", DType::kI64, Shape{}}};
  if (options_.noise) fields.push_back({"noise", DType::kF32, Shape{4}});
  return fields;
}

}  // namespace feedline::synth
